-- The sources of extracted memory, keyed by their page and without a copy of the log.
--
-- `conversation_memory_sources` (0027) kept each source of a fact with its page spelled as the
-- conversation's key, the agent's key and the path, and with the cited event's hash as 64 hex
-- characters: the log keeps that hash already, at the event's sequence, and the log never changes.
--
-- `extracted_sources` keeps a source by its page's id in `extracted_pages` (0035), the fact, the
-- version and the event's sequence, with the message id and the extraction run: a WITHOUT ROWID
-- table in the order its reads walk (a page's fact, newest version first). A read takes the
-- event's hash from the log, by the page's conversation and the sequence; a write stores a source
-- only if the log holds that event with the hash the source cites (a source that cites any other
-- fails its batch), so what a source proves is unchanged.
--
-- The rows stored before this migration stay in the old table, renamed
-- `conversation_memory_sources_v1`, until `npm run migrate` moves them a batch at a time
-- (src/storage/shard/table-moves.ts, `EXTRACTED_SOURCES_MOVE`, after the heads have moved);
-- an old row leaves only once the new table holds it. Under the old name is now a view of both
-- tables, through which a Worker not yet redeployed reads every source whatever the move has done,
-- and writes to the new table.

ALTER TABLE conversation_memory_sources RENAME TO conversation_memory_sources_v1;

DROP TRIGGER conversation_memory_sources_immutable_delete;

CREATE TRIGGER conversation_memory_sources_v1_closed BEFORE INSERT ON conversation_memory_sources_v1
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_sources_v1: new sources go to extracted_sources');
END;

CREATE TABLE extracted_sources (
  -- The page's id in extracted_pages.
  page INTEGER NOT NULL,
  fact_key TEXT NOT NULL CHECK (length(fact_key) BETWEEN 1 AND 64),
  version INTEGER NOT NULL CHECK (version >= 1),
  -- The cited event's sequence in the page's conversation; its hash is the log's.
  seq INTEGER NOT NULL CHECK (seq >= 1),
  message_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  PRIMARY KEY (page, fact_key, version, seq)
) WITHOUT ROWID;

CREATE TRIGGER extracted_sources_immutable_update BEFORE UPDATE ON extracted_sources
BEGIN
  SELECT RAISE(ABORT, 'extracted_sources: rows are immutable');
END;

CREATE TRIGGER extracted_sources_immutable_delete BEFORE DELETE ON extracted_sources
BEGIN
  SELECT RAISE(ABORT, 'extracted_sources: rows are immutable');
END;

-- What a Worker not yet redeployed reads and writes under the old name (the move copies and
-- deletes an old row in one transaction, so no source is in both tables at once). An event stored
-- before 0031 is in `events` until npm run migrate has copied it to the log: its hash is read there.
CREATE VIEW conversation_memory_sources AS
SELECT p.conversation_key AS conversation_key, p.agent_key AS agent_key, p.path AS path, s.fact_key AS fact_key, s.version AS version, s.seq AS seq,
  s.message_id AS message_id,
  COALESCE(
    (SELECT lower(hex(l.hash)) FROM log l WHERE l.conversation_key = p.conversation_key AND l.seq = s.seq),
    (SELECT e.hash FROM events e WHERE e.conversation_id = (SELECT conversation_id FROM conversation_keys WHERE id = p.conversation_key) AND e.seq = s.seq)
  ) AS event_hash,
  s.run_id AS run_id
FROM extracted_sources s
JOIN extracted_pages p ON p.id = s.page
UNION ALL
SELECT conversation_key, agent_key, path, fact_key, version, seq, message_id, event_hash, run_id FROM conversation_memory_sources_v1;

-- A source written under the old name: its hash must be the log's (or, for an event stored before
-- 0031 and not yet copied, `events`'), and a head the old table still holds moves to
-- extracted_pages first, with its id, its version and its terms' version (a source is keyed by it).
CREATE TRIGGER conversation_memory_sources_insert INSTEAD OF INSERT ON conversation_memory_sources
BEGIN
  SELECT RAISE(ABORT, 'extracted_sources: a source must cite an event of its conversation with its hash')
  WHERE NOT EXISTS (SELECT 1 FROM log l WHERE l.conversation_key = NEW.conversation_key AND l.seq = NEW.seq AND lower(hex(l.hash)) = NEW.event_hash)
    AND NOT EXISTS (
      SELECT 1 FROM events e
      WHERE e.conversation_id = (SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key) AND e.seq = NEW.seq AND e.hash = NEW.event_hash
    );
  INSERT INTO extracted_pages (id, conversation_key, agent_key, path, version, terms_version)
  SELECT o.id, NEW.conversation_key, NEW.agent_key, o.path, o.version, o.terms_version
  FROM conversation_memory_pages_v1 o
  WHERE o.conversation_id = (SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key)
    AND o.agent_id = (SELECT agent_id FROM agent_keys WHERE id = NEW.agent_key) AND o.path = NEW.path
  ON CONFLICT DO NOTHING;
  DELETE FROM conversation_memory_pages_v1
  WHERE conversation_id = (SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key)
    AND agent_id = (SELECT agent_id FROM agent_keys WHERE id = NEW.agent_key) AND path = NEW.path;
  INSERT INTO extracted_sources (page, fact_key, version, seq, message_id, run_id)
  SELECT p.id, NEW.fact_key, NEW.version, NEW.seq, NEW.message_id, NEW.run_id
  FROM extracted_pages p
  WHERE p.conversation_key = NEW.conversation_key AND p.agent_key = NEW.agent_key AND p.path = NEW.path
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER conversation_memory_sources_view_update INSTEAD OF UPDATE ON conversation_memory_sources
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_sources: rows are immutable');
END;

CREATE TRIGGER conversation_memory_sources_view_delete INSTEAD OF DELETE ON conversation_memory_sources
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_sources: rows are immutable');
END;

CREATE TRIGGER conversation_memory_sources_v1_leave_when_moved BEFORE DELETE ON conversation_memory_sources_v1
WHEN NOT EXISTS (
  SELECT 1 FROM extracted_sources s JOIN extracted_pages p ON p.id = s.page
  WHERE p.conversation_key = OLD.conversation_key AND p.agent_key = OLD.agent_key AND p.path = OLD.path
    AND s.fact_key = OLD.fact_key AND s.version = OLD.version AND s.seq = OLD.seq AND s.message_id = OLD.message_id AND s.run_id = OLD.run_id
)
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_sources_v1: a row leaves only once extracted_sources holds it');
END;

-- The sources stored before 0027 reach the new table through the old name too: the guard on
-- their old table and the view of them follow it there.
DROP TRIGGER conversation_memory_provenance_v1_moved_only;
CREATE TRIGGER conversation_memory_provenance_v1_moved_only BEFORE DELETE ON conversation_memory_provenance_v1
WHEN NOT EXISTS (
  SELECT 1 FROM conversation_memory_sources s
  WHERE s.conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = OLD.conversation_id)
    AND s.agent_key = (SELECT id FROM agent_keys WHERE agent_id = OLD.agent_id)
    AND s.path = OLD.path AND s.fact_key = OLD.fact_key AND s.version = OLD.version AND s.seq = OLD.seq
    AND s.message_id = OLD.message_id AND s.event_hash = OLD.event_hash AND s.run_id = OLD.run_id
)
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_provenance_v1: a row leaves only once conversation_memory_sources holds it exactly');
END;

DROP TRIGGER conversation_memory_provenance_insert;
DROP VIEW conversation_memory_provenance;
CREATE VIEW conversation_memory_provenance AS
SELECT k.conversation_id AS conversation_id, a.agent_id AS agent_id, s.path AS path, s.version AS version, s.fact_key AS fact_key,
  s.message_id AS message_id, s.seq AS seq, s.event_hash AS event_hash, s.run_id AS run_id
FROM conversation_memory_sources s
JOIN conversation_keys k ON k.id = s.conversation_key
JOIN agent_keys a ON a.id = s.agent_key
UNION ALL
SELECT conversation_id, agent_id, path, version, fact_key, message_id, seq, event_hash, run_id FROM conversation_memory_provenance_v1;

CREATE TRIGGER conversation_memory_provenance_insert INSTEAD OF INSERT ON conversation_memory_provenance
BEGIN
  INSERT INTO conversation_memory_sources (conversation_key, agent_key, path, fact_key, version, seq, message_id, event_hash, run_id)
  SELECT k.id, a.id, NEW.path, NEW.fact_key, NEW.version, NEW.seq, NEW.message_id, NEW.event_hash, NEW.run_id
  FROM conversation_keys k, agent_keys a
  WHERE k.conversation_id = NEW.conversation_id AND a.agent_id = NEW.agent_id;
END;
