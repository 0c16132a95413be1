-- The provenance of extracted memory, kept at a third of its cost.
--
-- `conversation_memory_provenance` (0016) kept each source of a fact three times: a rowid row, its
-- primary-key index (every column but three again) and `_by_key` (five more), each spelling the
-- conversation's and the agent's text ids. About 520 bytes and three entries written per source.
--
-- `conversation_memory_sources` keeps each source once: a WITHOUT ROWID table whose primary key is
-- the order its reads walk (a page's fact, newest version first), keyed by the conversation's
-- `conversation_keys` id and the agent's `agent_keys` id (0015, 0018; both exist before any version
-- of a page does). One entry written per source, about 190 bytes. A source names one event of the
-- log, so it is keyed by the event's sequence; its hash, as before, pins the event's exact content.
--
-- The rows stored before this migration stay in the old table, renamed
-- `conversation_memory_provenance_v1`, until `npm run migrate` moves them to the new one a batch at
-- a time (src/storage/shard/table-moves.ts); the old table lets a row go only once the new one
-- holds it exactly. Under the old name is now a view of both tables, through which a Worker not
-- yet redeployed reads every source whatever the move has done, and writes to the new table.

CREATE TABLE conversation_memory_sources (
  conversation_key INTEGER NOT NULL,
  agent_key INTEGER NOT NULL,
  path TEXT NOT NULL CHECK (substr(path, 1, 10) = 'extracted/'),
  fact_key TEXT NOT NULL CHECK (length(fact_key) BETWEEN 1 AND 64),
  version INTEGER NOT NULL CHECK (version >= 1),
  seq INTEGER NOT NULL CHECK (seq >= 1),
  message_id TEXT NOT NULL,
  event_hash TEXT NOT NULL CHECK (length(event_hash) = 64),
  run_id TEXT NOT NULL,
  PRIMARY KEY (conversation_key, agent_key, path, fact_key, version, seq)
) WITHOUT ROWID;

CREATE TRIGGER conversation_memory_sources_immutable_update BEFORE UPDATE ON conversation_memory_sources
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_sources: rows are immutable');
END;

CREATE TRIGGER conversation_memory_sources_immutable_delete BEFORE DELETE ON conversation_memory_sources
BEGIN
  SELECT RAISE(ABORT, 'conversation_memory_sources: rows are immutable');
END;

ALTER TABLE conversation_memory_provenance RENAME TO conversation_memory_provenance_v1;

DROP TRIGGER conversation_memory_provenance_immutable_delete;

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
  INSERT OR IGNORE INTO conversation_memory_sources (conversation_key, agent_key, path, fact_key, version, seq, message_id, event_hash, run_id)
  SELECT k.id, a.id, NEW.path, NEW.fact_key, NEW.version, NEW.seq, NEW.message_id, NEW.event_hash, NEW.run_id
  FROM conversation_keys k, agent_keys a
  WHERE k.conversation_id = NEW.conversation_id AND a.agent_id = NEW.agent_id;
END;
