-- Per-agent memory pages. Every write of a page is one row of `memory_page_versions`, appended
-- once and never changed: the triggers refuse UPDATE and DELETE, a gap in a page's versions, and a
-- tombstone that does not follow a live version. Deleting a page appends a tombstone (deleted = 1,
-- empty content), so every earlier version stays readable.
--
-- `memory_pages` (the head of each page) and `memory_fts` (the full-text index of each live head)
-- are derived from the versions by the AFTER INSERT trigger alone, in the same statement as the
-- insert, so they cannot disagree with the log whatever code path or operator writes it. They are
-- indexes, not history: rebuilding them from `memory_page_versions` loses nothing.

CREATE TABLE memory_page_versions (
  agent_id TEXT NOT NULL CHECK (length(agent_id) BETWEEN 1 AND 64),
  -- Segments of [A-Za-z0-9._-] joined by '/': no empty, '.' or '..' segment (src/core/memory-path.ts).
  path TEXT NOT NULL CHECK (
    length(path) BETWEEN 1 AND 200
    AND path NOT GLOB '*[^A-Za-z0-9._/-]*'
    AND '/' || path || '/' NOT LIKE '%//%'
    AND '/' || path || '/' NOT LIKE '%/./%'
    AND '/' || path || '/' NOT LIKE '%/../%'
  ),
  version INTEGER NOT NULL CHECK (version >= 1),
  content TEXT NOT NULL,
  -- SHA-256 (hex) of the content's UTF-8 bytes; a tombstone hashes the empty string.
  content_hash TEXT NOT NULL CHECK (length(content_hash) = 64),
  -- JavaScript string length (UTF-16 code units), the unit every budget is counted in. SQLite's
  -- length() counts code points, which undercounts astral characters, so it is stored, and bounded
  -- by what it can be: one or two code units per code point.
  chars INTEGER NOT NULL CHECK (chars BETWEEN length(content) AND 2 * length(content)),
  deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
  created_at TEXT NOT NULL,
  PRIMARY KEY (agent_id, path, version),
  CHECK (deleted = 0 OR (content = '' AND chars = 0))
);

CREATE TRIGGER memory_page_versions_gap_free BEFORE INSERT ON memory_page_versions
WHEN NEW.version <> (
  SELECT COALESCE(MAX(version), 0) + 1 FROM memory_page_versions WHERE agent_id = NEW.agent_id AND path = NEW.path
)
BEGIN
  SELECT RAISE(ABORT, 'memory_page_versions: version must be the next number of its page');
END;

CREATE TRIGGER memory_page_versions_tombstone_follows_live BEFORE INSERT ON memory_page_versions
WHEN NEW.deleted = 1 AND NOT EXISTS (
  SELECT 1 FROM memory_page_versions
  WHERE agent_id = NEW.agent_id AND path = NEW.path AND version = NEW.version - 1 AND deleted = 0
)
BEGIN
  SELECT RAISE(ABORT, 'memory_page_versions: only a live page can be deleted');
END;

CREATE TRIGGER memory_page_versions_immutable_update BEFORE UPDATE ON memory_page_versions
BEGIN
  SELECT RAISE(ABORT, 'memory_page_versions: rows are immutable');
END;

CREATE TRIGGER memory_page_versions_immutable_delete BEFORE DELETE ON memory_page_versions
BEGIN
  SELECT RAISE(ABORT, 'memory_page_versions: rows are immutable');
END;

-- The head of each page. `id` is an INTEGER PRIMARY KEY so that it never changes (VACUUM may
-- renumber the implicit rowid of any other table): it is the page's rowid in `memory_fts`, which
-- lets a write replace the page's index row by key instead of scanning the index for its path.
CREATE TABLE memory_pages (
  id INTEGER PRIMARY KEY,
  agent_id TEXT NOT NULL,
  path TEXT NOT NULL,
  version INTEGER NOT NULL,
  UNIQUE (agent_id, path),
  FOREIGN KEY (agent_id, path, version) REFERENCES memory_page_versions (agent_id, path, version)
);

-- The current live version of each page, for recall. unicode61 folds case and (with
-- remove_diacritics 2) accents on both the indexed text and the query terms.
CREATE VIRTUAL TABLE memory_fts USING fts5(
  agent_id UNINDEXED,
  path,
  content,
  tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER memory_page_versions_index AFTER INSERT ON memory_page_versions
BEGIN
  INSERT INTO memory_pages (agent_id, path, version) VALUES (NEW.agent_id, NEW.path, NEW.version)
  ON CONFLICT (agent_id, path) DO UPDATE SET version = excluded.version;
  DELETE FROM memory_fts
  WHERE rowid = (SELECT id FROM memory_pages WHERE agent_id = NEW.agent_id AND path = NEW.path);
  INSERT INTO memory_fts (rowid, agent_id, path, content)
  SELECT id, NEW.agent_id, NEW.path, NEW.content FROM memory_pages
  WHERE agent_id = NEW.agent_id AND path = NEW.path AND NEW.deleted = 0;
END;
