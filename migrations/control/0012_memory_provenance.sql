-- Provenance of extracted memory pages. Extraction reads each settled frozen slice and merges the
-- durable facts it holds into pages under `extracted/` of the agent's memory (one version of
-- `memory_page_versions` per change). Each row here says, for one page version, which fact key the
-- version set and one message it came from: the conversation, the platform message id, the event's
-- sequence and hash, and the extraction run. A fact's sources at a version are the rows of its key
-- at the newest version at or below it that has any. Rows are appended once, never changed.
CREATE TABLE memory_provenance (
  agent_id TEXT NOT NULL,
  path TEXT NOT NULL CHECK (path LIKE 'extracted/%'),
  version INTEGER NOT NULL,
  fact_key TEXT NOT NULL CHECK (length(fact_key) BETWEEN 1 AND 64),
  conversation_id TEXT NOT NULL,
  message_id TEXT NOT NULL,
  seq INTEGER NOT NULL CHECK (seq >= 1),
  event_hash TEXT NOT NULL CHECK (length(event_hash) = 64),
  run_id TEXT NOT NULL,
  PRIMARY KEY (agent_id, path, version, fact_key, event_hash),
  FOREIGN KEY (agent_id, path, version) REFERENCES memory_page_versions (agent_id, path, version)
);
-- A fact's newest sources: by page and key, newest version first.
CREATE INDEX memory_provenance_by_key ON memory_provenance (agent_id, path, fact_key, version);

CREATE TRIGGER memory_provenance_immutable_update BEFORE UPDATE ON memory_provenance
BEGIN
  SELECT RAISE(ABORT, 'memory_provenance: rows are immutable');
END;

CREATE TRIGGER memory_provenance_immutable_delete BEFORE DELETE ON memory_provenance
BEGIN
  SELECT RAISE(ABORT, 'memory_provenance: rows are immutable');
END;

-- The record of each extraction run is the conversation's: it lives on its shard (migrations/shard/0012).
