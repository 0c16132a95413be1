-- Lookups that amendments need without scanning a conversation's history: the source of a message
-- id, the corrections of a message, the proposal and deliveries of a proposal id. Partial
-- expression indexes: a query uses one when it repeats the same kind filter and expression.
CREATE INDEX events_source_by_message ON events (conversation_id, json_extract(body, '$.messageId')) WHERE kind = 'source';
CREATE INDEX events_correction_by_target ON events (conversation_id, json_extract(body, '$.targetMessageId')) WHERE kind = 'correction';
CREATE INDEX events_by_proposal ON events (conversation_id, json_extract(body, '$.proposalId')) WHERE kind IN ('proposal', 'delivery');

-- Incidents gain a kind for the resolver: a context request that found no valid chain head.
-- SQLite cannot alter a CHECK constraint, so the table is rebuilt with its rows kept.
CREATE TABLE incidents_next (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  run_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('compactor_failure', 'compactor_abandoned', 'plan_failure', 'resolver_failure')),
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  created_at TEXT NOT NULL
);
INSERT INTO incidents_next (id, conversation_id, agent_id, run_id, kind, code, message, created_at)
  SELECT id, conversation_id, agent_id, run_id, kind, code, message, created_at FROM incidents;
DROP TABLE incidents;
ALTER TABLE incidents_next RENAME TO incidents;
CREATE INDEX incidents_by_conversation ON incidents (conversation_id, id);
