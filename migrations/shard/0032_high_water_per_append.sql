-- The high-water mark, written once an append rather than once a row.
--
-- Since 0020 every row the log got moved `conversations.last_seq` by one (and, since 0023, counted
-- in `texts` the texts bm25 weighs): the conversation's row was written again for each event, so a
-- source served by n compactors wrote it n + 1 times (the source and each skipped run), and a batch
-- of n events n times.
--
-- Now the append's own statement moves both once, at the end of the batch that wrote the rows
-- (src/storage/shard/events.ts, `HIGH_WATER`): `last_seq` to the newest event the log holds,
-- `texts` by the texts among the rows after the old mark. Between appends the mark is what it was,
-- the number of the newest event ever stored; within a batch the log's own newest row is ahead of
-- it, so a row must follow both (`log_gap_free`). A number is still never handed out twice, and a
-- newest event deleted behind the service's back still leaves its number taken.
--
-- The mark only advances, and never past an event stored (`conversations_high_water_advances`,
-- which required a step of exactly one). A Worker from before 0031 appending to `events` still moves
-- it by one a row (`events_high_water`), and its rows reach `log` as before (`events_forward`).
--
-- A Worker from before this migration appends to `log` without the statement, so while one may
-- still be running (from this migration to its replacement's upload) each row moves the mark as
-- before: `high_water_mode.per_append` is 0 and `log_high_water` stays, for that mode only; the
-- append's statement then finds nothing after the mark and writes nothing. `npm run migrate -- --remote
-- --release` (the last step of `npm run deploy`, after the upload) sets it to 1; `npm run migrate`
-- on a local database, whose Worker is always this code, at once. A database that holds no
-- conversation yet has no Worker from before this migration appending to it: it starts at 1.

DROP TRIGGER log_gap_free;

CREATE TRIGGER log_gap_free BEFORE INSERT ON log
WHEN NEW.seq <> MAX(
    COALESCE((SELECT c.last_seq FROM conversations c JOIN conversation_keys k ON k.conversation_id = c.id WHERE k.id = NEW.conversation_key), 0),
    COALESCE((SELECT MAX(l.seq) FROM log l WHERE l.conversation_key = NEW.conversation_key), 0)
  ) + 1
  AND (NOT EXISTS (SELECT 1 FROM events) OR NOT EXISTS (SELECT 1 FROM events e JOIN conversation_keys k ON k.conversation_id = e.conversation_id WHERE k.id = NEW.conversation_key AND e.seq = NEW.seq))
BEGIN
  SELECT RAISE(ABORT, 'log: sequence must be the next number of its conversation');
END;

CREATE TABLE high_water_mode (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  per_append INTEGER NOT NULL CHECK (per_append IN (0, 1))
);
INSERT INTO high_water_mode (id, per_append) SELECT 1, NOT EXISTS (SELECT 1 FROM conversations);

DROP TRIGGER log_high_water;

CREATE TRIGGER log_high_water AFTER INSERT ON log
WHEN (SELECT per_append FROM high_water_mode WHERE id = 1) = 0
  AND (NOT EXISTS (SELECT 1 FROM events) OR NOT EXISTS (SELECT 1 FROM events e JOIN conversation_keys k ON k.conversation_id = e.conversation_id WHERE k.id = NEW.conversation_key AND e.seq = NEW.seq))
BEGIN
  UPDATE conversations
  SET last_seq = NEW.seq,
      texts = texts + (NEW.kind IN ('source', 'proposal') OR (NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'edit'))
  WHERE id = (SELECT conversation_id FROM conversation_keys WHERE id = NEW.conversation_key);
END;

DROP TRIGGER conversations_high_water_advances;

CREATE TRIGGER conversations_high_water_advances BEFORE UPDATE OF last_seq ON conversations
WHEN NEW.last_seq < OLD.last_seq
  OR NEW.last_seq > MAX(
    COALESCE((SELECT MAX(l.seq) FROM log l WHERE l.conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.id)), 0),
    COALESCE((SELECT MAX(e.seq) FROM events e WHERE e.conversation_id = NEW.id), 0)
  )
BEGIN
  SELECT RAISE(ABORT, 'conversations: the high-water mark only advances, and never past an event stored');
END;
