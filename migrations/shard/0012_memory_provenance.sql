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
