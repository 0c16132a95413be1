-- Extracted memory's versions and heads, keyed by integers and kept once.
--
-- `conversation_memory_versions` (0016) kept each version of a page as a rowid row beside its
-- primary-key index, both spelling the conversation's and the agent's text ids and the path, with
-- the content's hash as 64 hex characters and the time as 24 characters of text: every version
-- written twice, 160 bytes beside its content. `conversation_memory_pages` keyed each head by the
-- same text ids, again twice (the row and its unique index).
--
-- `extracted_versions` keeps the same versions in a WITHOUT ROWID table clustered on (conversation
-- key, agent key, path, version): the `conversation_keys` and `agent_keys` ids (0015, 0018) in
-- place of the text ids, the hash as its 32 bytes, the time in epoch milliseconds. The row is its
-- primary key, so a version is one entry. `extracted_pages` keeps each head by the same integer keys
-- and with the same id (the rowid of its terms in `conversation_memory_terms`, 0023). What a
-- version proves is unchanged: its hash covers the content, never how a row spells it.
--
-- The rows stored before this migration stay in the old tables, renamed `…_v1`, until `npm run
-- migrate` moves them a batch at a time (src/storage/shard/table-moves.ts, `EXTRACTED_PAGES_MOVE`
-- then `EXTRACTED_VERSIONS_MOVE`), before the new Worker is uploaded; an old row leaves only once the
-- new table holds it. Under the old names are now views of both tables, through which a Worker not
-- yet redeployed reads every version and head whatever the move has done, and writes to the new
-- tables. A version the move copies (its old row is still there) neither counts as the page's next
-- version nor moves its head; a version written while the page's head is still in the old table
-- takes the head over, with its id and its terms' version.

ALTER TABLE conversation_memory_versions RENAME TO conversation_memory_versions_v1;
ALTER TABLE conversation_memory_pages RENAME TO conversation_memory_pages_v1;

DROP TRIGGER conversation_memory_versions_gap_free;
DROP TRIGGER conversation_memory_versions_tombstone_follows_live;
DROP TRIGGER conversation_memory_versions_agent_key;
DROP TRIGGER conversation_memory_versions_head;
DROP TRIGGER conversation_memory_versions_immutable_delete;

CREATE TRIGGER conversation_memory_versions_v1_closed BEFORE INSERT ON conversation_memory_versions_v1
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_versions_v1: new versions go to extracted_versions');
END;

CREATE TRIGGER conversation_memory_pages_v1_closed BEFORE INSERT ON conversation_memory_pages_v1
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_pages_v1: new heads go to extracted_pages');
END;

CREATE TABLE extracted_versions (
  conversation_key INTEGER NOT NULL REFERENCES conversation_keys (id),
  agent_key INTEGER NOT NULL REFERENCES agent_keys (id),
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
  -- SHA-256 of the content's UTF-8 bytes, its 32 bytes (a tombstone hashes the empty string); read
  -- as the lowercase hex the API shows (`lower(hex(content_hash))`).
  content_hash BLOB NOT NULL CHECK (typeof(content_hash) = 'blob' AND length(content_hash) = 32),
  -- JavaScript string length (UTF-16 code units), the unit every budget is counted in; bounded by
  -- what it can be for the stored text (SQLite's length() counts code points).
  chars INTEGER NOT NULL CHECK (chars BETWEEN length(content) AND 2 * length(content)),
  deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
  -- When the version was written, in epoch milliseconds.
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (conversation_key, agent_key, path, version),
  CHECK (deleted = 0 OR (content = '' AND chars = 0))
) WITHOUT ROWID;

-- The rules of a page's versions, and its head, are kept in two sets of triggers: one for a shard
-- whose old tables are empty (every shard once `npm run migrate` has moved them; each insert then
-- pays a look at two empty tables), and one for the move and the deploy window, which also reads
-- the old tables by their text ids.

CREATE TRIGGER extracted_versions_gap_free BEFORE INSERT ON extracted_versions
WHEN NOT EXISTS (SELECT 1 FROM conversation_memory_versions_v1)
  AND NEW.version <> COALESCE((SELECT MAX(version) FROM extracted_versions WHERE conversation_key = NEW.conversation_key AND agent_key = NEW.agent_key AND path = NEW.path), 0) + 1
BEGIN
  SELECT RAISE(ABORT, 'extracted_versions: version must be the next number of its page');
END;

CREATE TRIGGER extracted_versions_tombstone_follows_live BEFORE INSERT ON extracted_versions
WHEN NEW.deleted = 1
  AND NOT EXISTS (SELECT 1 FROM extracted_versions WHERE conversation_key = NEW.conversation_key AND agent_key = NEW.agent_key AND path = NEW.path AND version = NEW.version - 1 AND deleted = 0)
  AND NOT EXISTS (
    SELECT 1 FROM conversation_memory_versions_v1 o
    WHERE o.conversation_id = (SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key)
      AND o.agent_id = (SELECT agent_id FROM agent_keys WHERE id = NEW.agent_key) AND o.path = NEW.path AND o.version = NEW.version - 1 AND o.deleted = 0
  )
BEGIN
  SELECT RAISE(ABORT, 'extracted_versions: only a live page can be deleted');
END;

CREATE TRIGGER extracted_versions_immutable_update BEFORE UPDATE ON extracted_versions
BEGIN
  SELECT RAISE(ABORT, 'extracted_versions: rows are immutable');
END;

CREATE TRIGGER extracted_versions_immutable_delete BEFORE DELETE ON extracted_versions
BEGIN
  SELECT RAISE(ABORT, 'extracted_versions: rows are immutable');
END;

CREATE TABLE extracted_pages (
  -- The rowid of the page's terms in conversation_memory_terms; a head moved from the old table keeps its id.
  id INTEGER PRIMARY KEY,
  conversation_key INTEGER NOT NULL,
  agent_key INTEGER NOT NULL,
  path TEXT NOT NULL,
  -- The newest version (live or tombstone); the version whose terms the index holds.
  version INTEGER NOT NULL,
  terms_version INTEGER,
  UNIQUE (conversation_key, agent_key, path)
);

-- The one writer of a head: a version written becomes its page's head (a new page's id follows
-- every id the table holds, which is every page's once the old table is empty).
CREATE TRIGGER extracted_versions_head AFTER INSERT ON extracted_versions
WHEN NOT EXISTS (SELECT 1 FROM conversation_memory_versions_v1) AND NOT EXISTS (SELECT 1 FROM conversation_memory_pages_v1)
BEGIN
  INSERT INTO extracted_pages (conversation_key, agent_key, path, version) VALUES (NEW.conversation_key, NEW.agent_key, NEW.path, NEW.version)
  ON CONFLICT (conversation_key, agent_key, path) DO UPDATE SET version = excluded.version;
END;

-- While the old tables hold rows. The old rows by the new keys: a version inserted exactly as an
-- old row holds it is the move copying it, which neither counts as its page's next version nor
-- moves its head. Any other version must follow its page's newest in either table, and takes over
-- a head the old table still holds, with its id and its terms' version.
CREATE VIEW extracted_versions_moving AS
SELECT k.id AS conversation_key, a.id AS agent_key, o.path AS path, o.version AS version, o.content AS content, o.content_hash AS content_hash, o.chars AS chars, o.deleted AS deleted
FROM conversation_memory_versions_v1 o
JOIN conversation_keys k ON k.conversation_id = o.conversation_id
JOIN agent_keys a ON a.agent_id = o.agent_id;

CREATE TRIGGER extracted_versions_gap_free_moving BEFORE INSERT ON extracted_versions
WHEN EXISTS (SELECT 1 FROM conversation_memory_versions_v1)
  AND NEW.version <> MAX(
    COALESCE((SELECT MAX(version) FROM extracted_versions WHERE conversation_key = NEW.conversation_key AND agent_key = NEW.agent_key AND path = NEW.path), 0),
    COALESCE((SELECT MAX(o.version) FROM conversation_memory_versions_v1 o
              WHERE o.conversation_id = (SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key)
                AND o.agent_id = (SELECT agent_id FROM agent_keys WHERE id = NEW.agent_key) AND o.path = NEW.path), 0)
  ) + 1
  AND NOT EXISTS (SELECT 1 FROM extracted_versions_moving m
    WHERE m.conversation_key = NEW.conversation_key AND m.agent_key = NEW.agent_key AND m.path = NEW.path AND m.version = NEW.version
      AND m.content = NEW.content AND m.content_hash = lower(hex(NEW.content_hash)) AND m.chars = NEW.chars AND m.deleted = NEW.deleted
  )
BEGIN
  SELECT RAISE(ABORT, 'extracted_versions: version must be the next number of its page');
END;

CREATE TRIGGER extracted_versions_head_moving AFTER INSERT ON extracted_versions
WHEN (EXISTS (SELECT 1 FROM conversation_memory_versions_v1) OR EXISTS (SELECT 1 FROM conversation_memory_pages_v1))
  AND NOT EXISTS (SELECT 1 FROM extracted_versions_moving m
    WHERE m.conversation_key = NEW.conversation_key AND m.agent_key = NEW.agent_key AND m.path = NEW.path AND m.version = NEW.version
      AND m.content = NEW.content AND m.content_hash = lower(hex(NEW.content_hash)) AND m.chars = NEW.chars AND m.deleted = NEW.deleted
  )
BEGIN
  INSERT INTO extracted_pages (id, conversation_key, agent_key, path, version, terms_version)
  SELECT COALESCE(o.id, MAX(COALESCE((SELECT MAX(id) FROM extracted_pages), 0), COALESCE((SELECT MAX(id) FROM conversation_memory_pages_v1), 0)) + 1),
         NEW.conversation_key, NEW.agent_key, NEW.path, NEW.version, o.terms_version
  FROM (SELECT 1) LEFT JOIN conversation_memory_pages_v1 o
    ON o.conversation_id = (SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key)
   AND o.agent_id = (SELECT agent_id FROM agent_keys WHERE id = NEW.agent_key) AND o.path = NEW.path
  WHERE true
  ON CONFLICT (conversation_key, agent_key, path) DO UPDATE SET version = excluded.version;
  DELETE FROM conversation_memory_pages_v1
  WHERE conversation_id = (SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key)
    AND agent_id = (SELECT agent_id FROM agent_keys WHERE id = NEW.agent_key) AND path = NEW.path;
END;

-- An old row leaves only once the new table holds it: a version exactly, a head with its id at
-- its version or a later one.
CREATE TRIGGER conversation_memory_versions_v1_leave_when_moved BEFORE DELETE ON conversation_memory_versions_v1
WHEN NOT EXISTS (
  SELECT 1 FROM extracted_versions v
  WHERE v.conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = OLD.conversation_id)
    AND v.agent_key = (SELECT id FROM agent_keys WHERE agent_id = OLD.agent_id)
    AND v.path = OLD.path AND v.version = OLD.version AND v.content = OLD.content AND v.content_hash = unhex(OLD.content_hash)
    AND v.chars = OLD.chars AND v.deleted = OLD.deleted
)
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_versions_v1: a row leaves only once extracted_versions holds it exactly');
END;

CREATE TRIGGER conversation_memory_pages_v1_leave_when_moved BEFORE DELETE ON conversation_memory_pages_v1
WHEN NOT EXISTS (
  SELECT 1 FROM extracted_pages p
  WHERE p.id = OLD.id
    AND p.conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = OLD.conversation_id)
    AND p.agent_key = (SELECT id FROM agent_keys WHERE agent_id = OLD.agent_id)
    AND p.path = OLD.path AND p.version >= OLD.version
)
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_pages_v1: a row leaves only once extracted_pages holds it');
END;

-- What a Worker not yet redeployed reads and writes under the old names (the move copies and
-- deletes an old row in one transaction, so no version is in both tables at once).
CREATE VIEW conversation_memory_versions AS
SELECT k.conversation_id AS conversation_id, a.agent_id AS agent_id, v.path AS path, v.version AS version, v.content AS content,
  lower(hex(v.content_hash)) AS content_hash, v.chars AS chars, v.deleted AS deleted,
  strftime('%Y-%m-%dT%H:%M:%fZ', v.created_ms / 1000.0, 'unixepoch') AS created_at
FROM extracted_versions v
JOIN conversation_keys k ON k.id = v.conversation_key
JOIN agent_keys a ON a.id = v.agent_key
UNION ALL
SELECT conversation_id, agent_id, path, version, content, content_hash, chars, deleted, created_at
FROM conversation_memory_versions_v1;

CREATE TRIGGER conversation_memory_versions_insert INSTEAD OF INSERT ON conversation_memory_versions
BEGIN
  INSERT INTO agent_keys (agent_id) VALUES (NEW.agent_id) ON CONFLICT (agent_id) DO NOTHING;
  INSERT INTO extracted_versions (conversation_key, agent_key, path, version, content, content_hash, chars, deleted, created_ms)
  VALUES (
    (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id), (SELECT id FROM agent_keys WHERE agent_id = NEW.agent_id),
    NEW.path, NEW.version, NEW.content, unhex(NEW.content_hash), NEW.chars, NEW.deleted,
    CAST(round((julianday(NEW.created_at) - 2440587.5) * 86400000.0) AS INTEGER)
  );
END;

CREATE TRIGGER conversation_memory_versions_view_update INSTEAD OF UPDATE ON conversation_memory_versions
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_versions: rows are immutable');
END;

CREATE TRIGGER conversation_memory_versions_view_delete INSTEAD OF DELETE ON conversation_memory_versions
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_versions: rows are immutable');
END;

CREATE VIEW conversation_memory_pages AS
SELECT p.id AS id, k.conversation_id AS conversation_id, a.agent_id AS agent_id, p.path AS path, p.version AS version, p.terms_version AS terms_version
FROM extracted_pages p
JOIN conversation_keys k ON k.id = p.conversation_key
JOIN agent_keys a ON a.id = p.agent_key
UNION ALL
SELECT id, conversation_id, agent_id, path, version, terms_version FROM conversation_memory_pages_v1;

CREATE TRIGGER conversation_memory_pages_update INSTEAD OF UPDATE OF terms_version ON conversation_memory_pages
BEGIN
  UPDATE extracted_pages SET terms_version = NEW.terms_version WHERE id = OLD.id;
  UPDATE conversation_memory_pages_v1 SET terms_version = NEW.terms_version WHERE id = OLD.id;
END;
