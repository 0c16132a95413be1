-- Incidents that repeat. Some incidents are conditions rather than events: a chain the resolver
-- refuses is refused (and was recorded) on every context call, a deadline whose handler keeps
-- failing fails on every retry. Such a condition is one row while it is open (`open = 1`): seen
-- again, its `count` and `last_seen_at` move and nothing else does (src/storage/compaction-store-incidents.ts
-- `raiseIncidentStatement`); it is closed (`open = 0`) when what it concerns is seen working again,
-- and the next occurrence after that opens a new row. "Open" is keyed by (conversation, agent, kind,
-- code): the unique partial index below makes a second open row for one key unstorable, so the
-- upsert that bumps the count is the only way to record a repeat. An incident that is one event
-- (a failed run attempt, a refused delivery) is stored closed, one row each, as before.
--
-- `agent_id` is '' for an incident of the conversation's own bookkeeping rather than of one agent's
-- chain (a catch-up deadline that keeps failing); the read API shows it as null.
-- `notified_at`: when the operator's chat was sent the notice of an open incident (null: not yet,
-- or no operator chat), so a notice whose send failed is sent on the next occurrence, and only once.
--
-- Kinds gain `wake_failure` (a deadline of the conversation's object whose handler keeps failing).
-- SQLite cannot alter a CHECK constraint, so the table is rebuilt with its rows kept (each one closed,
-- seen once, when it was recorded).
CREATE TABLE incidents_next (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  run_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('compactor_failure', 'compactor_abandoned', 'compaction_stalled', 'plan_failure', 'resolver_failure', 'agent_failure', 'delivery_failure', 'extraction_failure', 'wake_failure')),
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  created_at TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1),
  last_seen_at TEXT NOT NULL,
  open INTEGER NOT NULL DEFAULT 0 CHECK (open IN (0, 1)),
  notified_at TEXT,
  CHECK (last_seen_at >= created_at)
);
INSERT INTO incidents_next (id, conversation_id, agent_id, run_id, kind, code, message, created_at, count, last_seen_at, open)
  SELECT id, conversation_id, agent_id, run_id, kind, code, message, created_at, 1, created_at, 0 FROM incidents;
DROP TABLE incidents;
ALTER TABLE incidents_next RENAME TO incidents;
CREATE INDEX incidents_by_conversation ON incidents (conversation_id, id);
CREATE INDEX incidents_by_run ON incidents (run_id, kind) WHERE run_id IS NOT NULL;
CREATE UNIQUE INDEX incidents_open ON incidents (conversation_id, agent_id, kind, code) WHERE open = 1;
