-- The event log, kept at the size of what it holds.
--
-- `events` (0001) kept each event as a rowid row beside a primary-key index on (conversation, seq)
-- and a unique index on (conversation, idempotency key), each spelling the conversation's text id
-- (a Telegram group's is 34 characters), with the time as 24 characters of text: four entries
-- written per source (the row, both keys, the index by message id), three per run.
--
-- `log` keeps the same events in a WITHOUT ROWID table clustered on (conversation key, seq), the
-- conversation's `conversation_keys` id (0015) in place of its text id, the hash as its 32 bytes
-- rather than 64 hex characters and the time in epoch milliseconds: the row is its primary key, so one entry fewer per event, and every index entry
-- (the idempotency key's, the lookups by message and proposal, the chain's anchors) names the
-- conversation by a small integer. The event's hash covers the canonical event, never how a row
-- spells it (src/core/hash.ts), so nothing an event proves changes.
--
-- A deployment upgrades in three steps, and the Worker before this migration keeps working
-- through all of them:
--   1. This migration: `log` and its triggers; `events` stays a table (a Worker not yet redeployed
--      appends with `INSERT … ON CONFLICT`, which a view cannot take), and every row it still gets
--      is forwarded to `log` (`events_forward`) after `events`' own triggers kept the high-water
--      mark and the turn index as before.
--   2. `npm run migrate` copies the rows stored before into `log`, a batch at a time
--      (src/storage/shard/table-moves.ts, `LOG_COPY`), before the new Worker is uploaded: the new
--      Worker reads and writes `log` only.
--   3. Once the new Worker is live (`npm run deploy` runs it after the upload; `npm run migrate`
--      alone does it only for a local database, whose Worker is always this code), the copied rows
--      leave `events`, each only once `log` holds it exactly (`events_leave_when_copied`).
--
-- A row `log` gets from `events` (forwarded or copied) was counted, checked for gaps and indexed
-- when `events` got it: `log`'s own triggers pass over any row `events` holds (once `events` is
-- empty, that costs them a look at an empty table).

CREATE TABLE log (
  conversation_key INTEGER NOT NULL REFERENCES conversation_keys (id),
  seq INTEGER NOT NULL CHECK (seq >= 1),
  kind TEXT NOT NULL CHECK (kind IN ('source', 'run', 'proposal', 'delivery', 'correction')),
  idempotency_key TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 200),
  sensitive INTEGER NOT NULL CHECK (sensitive IN (0, 1)),
  -- The event body as src/core/stored-body.ts spells it (RFC 8785 canonical JSON, or a skipped
  -- run's array of values).
  body TEXT NOT NULL,
  -- SHA-256 of the canonical event envelope (conversation, kind, key, sensitivity, body), its 32
  -- bytes; read as the lowercase hex the API shows (`lower(hex(hash))`).
  hash BLOB NOT NULL CHECK (typeof(hash) = 'blob' AND length(hash) = 32),
  -- When the event was stored, in epoch milliseconds.
  recorded_at INTEGER NOT NULL,
  PRIMARY KEY (conversation_key, seq)
) WITHOUT ROWID;

CREATE UNIQUE INDEX log_by_key ON log (conversation_key, idempotency_key);
CREATE INDEX log_source_by_message ON log (conversation_key, json_extract(body, '$.messageId')) WHERE kind = 'source';
CREATE INDEX log_correction_by_target ON log (conversation_key, json_extract(body, '$.targetMessageId')) WHERE kind = 'correction';
CREATE INDEX log_by_proposal ON log (conversation_key, json_extract(body, '$.proposalId')) WHERE kind IN ('proposal', 'delivery');
CREATE INDEX log_proposal_by_reply ON log (conversation_key, json_extract(body, '$.replyToMessageId')) WHERE kind = 'proposal';
CREATE UNIQUE INDEX log_chain_anchor ON log (
  conversation_key,
  json_extract(body, '$.anchor.epochId'),
  json_extract(body, '$.anchor.position')
) WHERE kind = 'run' AND json_extract(body, '$.anchor.epochId') IS NOT NULL;

CREATE TRIGGER log_gap_free BEFORE INSERT ON log
WHEN NEW.seq <> COALESCE((SELECT c.last_seq FROM conversations c JOIN conversation_keys k ON k.conversation_id = c.id WHERE k.id = NEW.conversation_key), 0) + 1
  AND (NOT EXISTS (SELECT 1 FROM events) OR NOT EXISTS (SELECT 1 FROM events e JOIN conversation_keys k ON k.conversation_id = e.conversation_id WHERE k.id = NEW.conversation_key AND e.seq = NEW.seq))
BEGIN
  SELECT RAISE(ABORT, 'log: sequence must be the next number of its conversation');
END;

CREATE TRIGGER log_high_water AFTER INSERT ON log
WHEN (NOT EXISTS (SELECT 1 FROM events) OR NOT EXISTS (SELECT 1 FROM events e JOIN conversation_keys k ON k.conversation_id = e.conversation_id WHERE k.id = NEW.conversation_key AND e.seq = NEW.seq))
BEGIN
  UPDATE conversations
  SET last_seq = NEW.seq,
      texts = texts + (NEW.kind IN ('source', 'proposal') OR (NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'edit'))
  WHERE id = (SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key);
END;

CREATE TRIGGER log_feed_turns AFTER INSERT ON log
WHEN NEW.kind <> 'run'
  AND (NOT EXISTS (SELECT 1 FROM events) OR NOT EXISTS (SELECT 1 FROM events e JOIN conversation_keys k ON k.conversation_id = e.conversation_id WHERE k.id = NEW.conversation_key AND e.seq = NEW.seq))
BEGIN
  INSERT INTO turn_feed (conversation_id, seq, kind, sensitive, body)
  VALUES ((SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key), NEW.seq, NEW.kind, NEW.sensitive, NEW.body);
END;

CREATE TRIGGER log_immutable_update BEFORE UPDATE ON log
BEGIN
  SELECT RAISE(ABORT, 'log: rows are immutable');
END;

CREATE TRIGGER log_immutable_delete BEFORE DELETE ON log
BEGIN
  SELECT RAISE(ABORT, 'log: rows are immutable');
END;

-- Step 1: what a Worker not yet redeployed appends reaches `log` too.
CREATE TRIGGER events_forward AFTER INSERT ON events
BEGIN
  INSERT OR IGNORE INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at)
  VALUES (
    (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id), NEW.seq, NEW.kind, NEW.idempotency_key,
    NEW.sensitive, NEW.body, unhex(NEW.hash), CAST(round((julianday(NEW.recorded_at) - 2440587.5) * 86400000.0) AS INTEGER)
  );
END;

-- Step 2's progress: the copy has taken every `events` row through this rowid.
CREATE TABLE log_copy (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  through_rowid INTEGER NOT NULL CHECK (through_rowid >= 0)
);
INSERT INTO log_copy (id, through_rowid) VALUES (1, 0);

-- Step 3: a row leaves `events` only once `log` holds it exactly.
DROP TRIGGER events_immutable_delete;
CREATE TRIGGER events_leave_when_copied BEFORE DELETE ON events
WHEN NOT EXISTS (
  SELECT 1 FROM log l JOIN conversation_keys k ON k.id = l.conversation_key
  WHERE k.conversation_id = OLD.conversation_id AND l.seq = OLD.seq AND l.kind = OLD.kind AND l.idempotency_key = OLD.idempotency_key
    AND l.sensitive = OLD.sensitive AND l.body = OLD.body AND l.hash = unhex(OLD.hash)
)
BEGIN
  SELECT RAISE(ABORT, 'events: a row leaves only once log holds it');
END;
