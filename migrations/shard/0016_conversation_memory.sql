-- Extracted memory, kept with the conversation it was said in. Extraction (src/queue/extract.ts)
-- reads each settled frozen slice of a conversation and merges the durable facts it holds into
-- pages under `extracted/`; every page here belongs to one conversation and one agent, and lives
-- on the conversation's shard beside the log its facts cite. Pages a person writes
-- (`PUT /v1/agents/{agent}/memory/{path}`) stay agent-wide in the control database
-- (migrations/control/0004). What may be served where is one rule: src/core/memory-privacy.ts.
--
-- The storage format repeats control's 0004 and 0012 with the conversation in every key:
--   * `conversation_memory_versions`: one immutable row per write of a page, numbered 1, 2, 3… per
--     (conversation, agent, path) without gaps; triggers refuse UPDATE, DELETE, a gap, and a
--     tombstone (deleted = 1, empty content) that does not follow a live version.
--   * `conversation_memory_pages` (the head of each page) and `conversation_memory_fts` (the
--     full-text index of each live head) are derived from the versions by the AFTER INSERT trigger
--     alone, in the same statement as the insert. They are indexes, not history: rebuilding them
--     from the versions loses nothing.
--   * `conversation_memory_provenance`: for one page version, which fact key the version set and
--     one message it came from (the conversation is the page's). A fact's sources at a version are
--     the rows of its key at the newest version at or below it that has any.

CREATE TABLE conversation_memory_versions (
  conversation_id TEXT NOT NULL CHECK (length(conversation_id) BETWEEN 1 AND 512),
  agent_id TEXT NOT NULL CHECK (length(agent_id) BETWEEN 1 AND 64),
  -- Segments of [A-Za-z0-9._-] joined by '/' (src/core/memory-path.ts), always under extracted/.
  path TEXT NOT NULL CHECK (
    length(path) BETWEEN 1 AND 200
    AND substr(path, 1, 10) = 'extracted/'
    AND path NOT GLOB '*[^A-Za-z0-9._/-]*'
    AND '/' || path || '/' NOT LIKE '%//%'
    AND '/' || path || '/' NOT LIKE '%/./%'
    AND '/' || path || '/' NOT LIKE '%/../%'
  ),
  version INTEGER NOT NULL CHECK (version >= 1),
  content TEXT NOT NULL,
  -- SHA-256 (hex) of the content's UTF-8 bytes; a tombstone hashes the empty string.
  content_hash TEXT NOT NULL CHECK (length(content_hash) = 64),
  -- JavaScript string length (UTF-16 code units), the unit every budget is counted in; bounded by
  -- what it can be for the stored text (SQLite's length() counts code points).
  chars INTEGER NOT NULL CHECK (chars BETWEEN length(content) AND 2 * length(content)),
  deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
  created_at TEXT NOT NULL,
  PRIMARY KEY (conversation_id, agent_id, path, version),
  CHECK (deleted = 0 OR (content = '' AND chars = 0))
);

CREATE TRIGGER conversation_memory_versions_gap_free BEFORE INSERT ON conversation_memory_versions
WHEN NEW.version <> (
  SELECT COALESCE(MAX(version), 0) + 1 FROM conversation_memory_versions
  WHERE conversation_id = NEW.conversation_id AND agent_id = NEW.agent_id AND path = NEW.path
)
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_versions: version must be the next number of its page');
END;

CREATE TRIGGER conversation_memory_versions_tombstone_follows_live BEFORE INSERT ON conversation_memory_versions
WHEN NEW.deleted = 1 AND NOT EXISTS (
  SELECT 1 FROM conversation_memory_versions
  WHERE conversation_id = NEW.conversation_id AND agent_id = NEW.agent_id AND path = NEW.path AND version = NEW.version - 1 AND deleted = 0
)
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_versions: only a live page can be deleted');
END;

CREATE TRIGGER conversation_memory_versions_immutable_update BEFORE UPDATE ON conversation_memory_versions
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_versions: rows are immutable');
END;

CREATE TRIGGER conversation_memory_versions_immutable_delete BEFORE DELETE ON conversation_memory_versions
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_versions: rows are immutable');
END;

-- The head of each page. `id` is an INTEGER PRIMARY KEY so that it never changes (VACUUM may
-- renumber any other table's implicit rowid): it is the page's rowid in the full-text index.
CREATE TABLE conversation_memory_pages (
  id INTEGER PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  path TEXT NOT NULL,
  version INTEGER NOT NULL,
  UNIQUE (conversation_id, agent_id, path),
  FOREIGN KEY (conversation_id, agent_id, path, version) REFERENCES conversation_memory_versions (conversation_id, agent_id, path, version)
);

-- The current live version of each page, for recall, indexed by the turn index's rules
-- (migrations/shard/0015_search_index.sql, src/core/search-text.ts): the porter stemmer, folded
-- Arabic-script letters and digits, character pairs of scripts written without spaces in `grams`,
-- and scoped in the index — `scope` holds the conversation's token (`k` and its key in
-- `conversation_keys`), ANDed with every search's terms, so a search walks that conversation's pages only.
-- `conversation_memory_search_rows` is the one definition of a live page's index row.
CREATE VIEW conversation_memory_search_text AS
SELECT p.id AS id, p.conversation_id AS conversation_id, p.agent_id AS agent_id, p.path AS path, CASE WHEN v.content GLOB '*[؀-ۿ‌]*' THEN replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(v.content, char(8204), ''), char(1600), ''), char(1610), char(1740)), char(1609), char(1740)), char(1603), char(1705)), char(1577), char(1607)), char(1728), char(1607)), char(1571), char(1575)), char(1573), char(1575)), char(1570), char(1575)), char(1649), char(1575)), char(1572), char(1608)), char(1776), char(48)), char(1777), char(49)), char(1778), char(50)), char(1779), char(51)), char(1780), char(52)), char(1781), char(53)), char(1782), char(54)), char(1783), char(55)), char(1784), char(56)), char(1785), char(57)), char(1632), char(48)), char(1633), char(49)), char(1634), char(50)), char(1635), char(51)), char(1636), char(52)), char(1637), char(53)), char(1638), char(54)), char(1639), char(55)), char(1640), char(56)), char(1641), char(57)) ELSE v.content END AS content
FROM conversation_memory_pages p
JOIN conversation_memory_versions v ON v.conversation_id = p.conversation_id AND v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version
WHERE v.deleted = 0;

CREATE VIEW conversation_memory_search_rows AS
SELECT s.id AS id, s.conversation_id AS conversation_id, s.agent_id AS agent_id,
  (SELECT 'k' || k.id FROM conversation_keys k WHERE k.conversation_id = s.conversation_id) AS scope,
  s.path AS path, s.content AS content,
  CASE WHEN (s.content GLOB '*[฀-໿က-႟ក-៿぀-ヿ]*' OR s.content GLOB '*[㐀-䶿一-鿿豈-﫿𠀀-𱍏]*') THEN (
    SELECT group_concat(CASE WHEN nx THEN c || nc ELSE c END, ' ') FROM (
      SELECT c, here, lead(here, 1, 0) OVER w AS nx, lag(here, 1, 0) OVER w AS prev, lead(c) OVER w AS nc FROM (
        SELECT n, substr(s.content, n, 1) AS c,
          EXISTS (SELECT 1 FROM search_no_space_ranges r WHERE unicode(substr(s.content, n, 1)) BETWEEN r.lo AND r.hi) AS here
        FROM search_positions WHERE n <= length(s.content)
      ) WINDOW w AS (ORDER BY n)
    ) WHERE here AND (nx OR NOT prev)
  ) ELSE '' END AS grams
FROM conversation_memory_search_text s;

CREATE VIRTUAL TABLE conversation_memory_fts USING fts5(scope, path, content, grams, tokenize = 'porter unicode61 remove_diacritics 2');

-- The one writer of the head and the index.
CREATE TRIGGER conversation_memory_versions_index AFTER INSERT ON conversation_memory_versions
BEGIN
  INSERT INTO conversation_memory_pages (conversation_id, agent_id, path, version) VALUES (NEW.conversation_id, NEW.agent_id, NEW.path, NEW.version)
  ON CONFLICT (conversation_id, agent_id, path) DO UPDATE SET version = excluded.version;
  DELETE FROM conversation_memory_fts
  WHERE rowid = (SELECT id FROM conversation_memory_pages WHERE conversation_id = NEW.conversation_id AND agent_id = NEW.agent_id AND path = NEW.path);
  INSERT INTO conversation_memory_fts (rowid, scope, path, content, grams)
  SELECT id, scope, path, content, grams FROM conversation_memory_search_rows
  WHERE conversation_id = NEW.conversation_id AND agent_id = NEW.agent_id AND path = NEW.path;
END;

CREATE TABLE conversation_memory_provenance (
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  path TEXT NOT NULL,
  version INTEGER NOT NULL,
  fact_key TEXT NOT NULL CHECK (length(fact_key) BETWEEN 1 AND 64),
  message_id TEXT NOT NULL,
  seq INTEGER NOT NULL CHECK (seq >= 1),
  event_hash TEXT NOT NULL CHECK (length(event_hash) = 64),
  run_id TEXT NOT NULL,
  PRIMARY KEY (conversation_id, agent_id, path, version, fact_key, event_hash),
  FOREIGN KEY (conversation_id, agent_id, path, version) REFERENCES conversation_memory_versions (conversation_id, agent_id, path, version)
);
-- A fact's newest sources: by page and key, newest version first.
CREATE INDEX conversation_memory_provenance_by_key ON conversation_memory_provenance (conversation_id, agent_id, path, fact_key, version);

CREATE TRIGGER conversation_memory_provenance_immutable_update BEFORE UPDATE ON conversation_memory_provenance
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_provenance: rows are immutable');
END;

CREATE TRIGGER conversation_memory_provenance_immutable_delete BEFORE DELETE ON conversation_memory_provenance
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_provenance: rows are immutable');
END;
