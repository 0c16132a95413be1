-- Extraction runs, a shard's part of memory provenance (the pages and their provenance rows are
-- the agent's, in the control database: migrations/control/0012).
-- One row per completed extraction run of a conversation on this shard: which boundary's slice it
-- read, what extracted it (model evidence, or the offline extractor), and how much it found and
-- wrote. The run id is derived from the compaction run, so a redelivered job finds its own row
-- instead of adding one.
CREATE TABLE extraction_runs (
  run_id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  boundary_id TEXT NOT NULL UNIQUE,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  input_tokens INTEGER,
  output_tokens INTEGER,
  facts INTEGER NOT NULL CHECK (facts >= 0),
  versions_written INTEGER NOT NULL CHECK (versions_written >= 0),
  created_at TEXT NOT NULL
);
CREATE INDEX extraction_runs_by_conversation ON extraction_runs (conversation_id, agent_id);

-- Incidents gain `extraction_failure`: a failed extraction attempt is private evidence like a
-- compactor's, and never touches the chain.
CREATE TABLE incidents_next (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  run_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('compactor_failure', 'compactor_abandoned', 'compaction_stalled', 'plan_failure', 'resolver_failure', 'agent_failure', 'delivery_failure', 'extraction_failure')),
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  created_at TEXT NOT NULL
);
INSERT INTO incidents_next (id, conversation_id, agent_id, run_id, kind, code, message, created_at)
  SELECT id, conversation_id, agent_id, run_id, kind, code, message, created_at FROM incidents;
DROP TABLE incidents;
ALTER TABLE incidents_next RENAME TO incidents;
CREATE INDEX incidents_by_conversation ON incidents (conversation_id, id);
CREATE INDEX incidents_by_run ON incidents (run_id, kind) WHERE run_id IS NOT NULL;
