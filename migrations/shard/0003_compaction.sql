-- Compaction, a shard's part: activations, plans, boundaries and incidents of the conversations
-- placed on the shard (declarations and documents are the control database's: migrations/control/0003).
-- Like the event log, these rows are written once: a new boundary is a new row. The UNIQUE
-- constraint on boundaries makes a fork (two boundaries after the same predecessor in one epoch)
-- impossible to store, whatever code tries it.

CREATE TABLE activations (
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  epoch_id TEXT NOT NULL,
  frontier_id TEXT NOT NULL UNIQUE,
  frontier_hash TEXT NOT NULL CHECK (length(frontier_hash) = 64),
  -- Source sequence of the oldest group the frontier keeps (0: the conversation was empty).
  start_seq INTEGER NOT NULL CHECK (start_seq >= 0),
  activating_seq INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (conversation_id, agent_id, epoch_id)
);

CREATE TABLE compaction_plans (
  run_id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  epoch_id TEXT NOT NULL,
  -- '' for the first boundary of an epoch, so uniqueness below also covers the first link.
  previous_boundary_id TEXT NOT NULL,
  packet_key TEXT NOT NULL UNIQUE,
  packet_hash TEXT NOT NULL CHECK (length(packet_hash) = 64),
  trigger_seq INTEGER NOT NULL,
  through_seq INTEGER NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX compaction_plans_by_chain ON compaction_plans (conversation_id, agent_id, epoch_id, created_at);

CREATE TABLE boundaries (
  id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  epoch_id TEXT NOT NULL,
  position INTEGER NOT NULL CHECK (position >= 1),
  previous_id TEXT NOT NULL,
  previous_hash TEXT,
  covered_through_seq INTEGER NOT NULL,
  run_id TEXT NOT NULL UNIQUE REFERENCES compaction_plans (run_id),
  -- RFC 8785 canonical JSON of the whole boundary event, its own hash excluded.
  body TEXT NOT NULL,
  hash TEXT NOT NULL CHECK (length(hash) = 64),
  created_at TEXT NOT NULL,
  UNIQUE (conversation_id, agent_id, epoch_id, previous_id),
  UNIQUE (conversation_id, agent_id, epoch_id, position)
);

CREATE TRIGGER boundaries_immutable_update BEFORE UPDATE ON boundaries
BEGIN
  SELECT RAISE(ABORT, 'boundaries: rows are immutable');
END;
CREATE TRIGGER boundaries_immutable_delete BEFORE DELETE ON boundaries
BEGIN
  SELECT RAISE(ABORT, 'boundaries: rows are immutable');
END;

CREATE TABLE incidents (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  run_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('compactor_failure', 'compactor_abandoned', 'plan_failure')),
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX incidents_by_conversation ON incidents (conversation_id, id);
