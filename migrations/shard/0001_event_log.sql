-- The system of record. Every fact about a conversation is one row of `events`,
-- appended once and never changed: the triggers below make UPDATE and DELETE
-- impossible, and the insert trigger makes a gap in a conversation's sequence
-- impossible, so these invariants hold for every code path and every operator.

CREATE TABLE conversations (
  id TEXT PRIMARY KEY,
  created_at TEXT NOT NULL
);

CREATE TABLE events (
  conversation_id TEXT NOT NULL REFERENCES conversations (id),
  seq INTEGER NOT NULL CHECK (seq >= 1),
  kind TEXT NOT NULL CHECK (kind IN ('source', 'run', 'proposal', 'delivery', 'correction')),
  idempotency_key TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 200),
  sensitive INTEGER NOT NULL CHECK (sensitive IN (0, 1)),
  -- RFC 8785 canonical JSON of the validated event body.
  body TEXT NOT NULL,
  -- SHA-256 (hex) of the canonical event envelope: conversation, kind, key, sensitivity, body.
  hash TEXT NOT NULL CHECK (length(hash) = 64),
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (conversation_id, seq),
  UNIQUE (conversation_id, idempotency_key)
);

CREATE TRIGGER events_gap_free BEFORE INSERT ON events
WHEN NEW.seq <> (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE conversation_id = NEW.conversation_id)
BEGIN
  SELECT RAISE(ABORT, 'events: sequence must be the next number of its conversation');
END;

CREATE TRIGGER events_immutable_update BEFORE UPDATE ON events
BEGIN
  SELECT RAISE(ABORT, 'events: rows are immutable');
END;

CREATE TRIGGER events_immutable_delete BEFORE DELETE ON events
BEGIN
  SELECT RAISE(ABORT, 'events: rows are immutable');
END;
