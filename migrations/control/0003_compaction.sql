-- Compaction, the control database's part: declarations and the trusted documents' index (the
-- activations, plans, boundaries and incidents are per conversation: migrations/shard/0003).
-- Like the event log, these rows are written once: a new declaration is a new revision.

CREATE TABLE declarations (
  agent_id TEXT NOT NULL,
  revision INTEGER NOT NULL CHECK (revision >= 1),
  compactor_id TEXT NOT NULL,
  compactor_version TEXT NOT NULL,
  fingerprint TEXT NOT NULL CHECK (length(fingerprint) = 64),
  epoch_id TEXT NOT NULL,
  -- RFC 8785 canonical JSON of the validated { agent, compactor } pair.
  registration TEXT NOT NULL,
  prompt TEXT NOT NULL,
  prompt_hash TEXT NOT NULL CHECK (length(prompt_hash) = 64),
  created_at TEXT NOT NULL,
  PRIMARY KEY (agent_id, revision)
);
CREATE INDEX declarations_by_compactor ON declarations (compactor_id);

CREATE TABLE documents (
  agent_id TEXT NOT NULL,
  name TEXT NOT NULL,
  hash TEXT NOT NULL CHECK (length(hash) = 64),
  r2_key TEXT NOT NULL,
  chars INTEGER NOT NULL CHECK (chars >= 0),
  created_at TEXT NOT NULL,
  PRIMARY KEY (agent_id, name, hash)
);

CREATE TRIGGER declarations_immutable_update BEFORE UPDATE ON declarations
BEGIN
  SELECT RAISE(ABORT, 'declarations: rows are immutable');
END;
