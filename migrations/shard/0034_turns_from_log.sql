-- A message's turn is read from its own row in the log; `turns` keeps only what later events add.
--
-- Since 0028 every source wrote its turn's fold into `turns`: a row and an entry of `turns_by_seq`,
-- two of the nine rows a source below its trigger wrote, holding its role, message id, sequence
-- number, author and sensitivity, all of which its own row in the log already says. What the log's
-- row cannot say is what came after it: the winning edit, a deletion, a reply's delivery, and the
-- author's folded search name when folding changes it (0023).
--
-- So a source no longer writes its fold: a reader takes a turn's origin from the log (the first
-- source or proposal with its message id, src/storage/shard/turn-places.ts) and what came after
-- from `turns`, which now holds a row only for a message an event came back to, or whose id a
-- later source repeated (the row names the first, which is the message's turn; the repeat is not). An edit or a
-- deletion that finds no row writes one with its message's sequence number read from the log (the
-- first source with that message id, by `log_source_by_message`, named: without statistics the
-- planner would walk the conversation's key range for the lowest number instead), so a row's `seq`
-- is its origin's once the origin is stored, whichever came first. A source that finds a row (an edit or a
-- deletion came before it) completes it, as before. Replies keep their row from the proposal on:
-- nearly all are delivered, which writes it anyway.
--
-- A Worker from before this migration reads every turn from `turns`, so while one may still run
-- (from this migration to its replacement's upload) every source writes its row as before:
-- `turn_rows.sparse` is 0 after the migration on a database that holds conversations, and
-- `npm run migrate -- --remote --release` (the last step of `npm run deploy`) sets it to 1;
-- `npm run migrate` on a local database at once. A new database starts at 1. Rows written before
-- stay (the table's rows are never deleted); a reader takes them as what they are, the same fold.

CREATE TABLE turn_rows (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  sparse INTEGER NOT NULL CHECK (sparse IN (0, 1))
);
INSERT INTO turn_rows (id, sparse) SELECT 1, NOT EXISTS (SELECT 1 FROM conversations);

DROP TRIGGER turn_feed_source;

CREATE TRIGGER turn_feed_source INSTEAD OF INSERT ON turn_feed WHEN NEW.kind = 'source'
BEGIN
  INSERT OR IGNORE INTO turns SELECT * FROM turn_index_v1_turns WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND role = 'user' AND message_id = json_extract(NEW.body, '$.messageId');
  INSERT INTO turns (conversation_key, role, message_id, seq, author_id, author_name, origin_sensitive)
  SELECT
    k.id, 'user', json_extract(NEW.body, '$.messageId'), f.seq,
    CASE WHEN f.seq = NEW.seq THEN COALESCE(json_extract(NEW.body, '$.author.id'), json_extract(NEW.body, '$.a[0]')) END,
    CASE WHEN f.seq = NEW.seq THEN COALESCE(json_extract(NEW.body, '$.author.name'), json_extract(NEW.body, '$.author.username'), json_extract(NEW.body, '$.a[1]'), json_extract(NEW.body, '$.a[2]')) END,
    CASE WHEN f.seq = NEW.seq THEN NEW.sensitive ELSE 0 END
  FROM conversation_keys k, (
    SELECT COALESCE(MIN(l.seq), NEW.seq) AS seq FROM log l INDEXED BY log_source_by_message
    WHERE l.conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND l.kind = 'source' AND json_extract(l.body, '$.messageId') = json_extract(NEW.body, '$.messageId')
  ) f
  WHERE k.conversation_id = NEW.conversation_id
    AND (COALESCE((SELECT sparse FROM turn_rows WHERE id = 1), 0) = 0
      OR f.seq < NEW.seq
      OR EXISTS (SELECT 1 FROM turns t WHERE t.conversation_key = k.id AND t.role = 'user' AND t.message_id = json_extract(NEW.body, '$.messageId')))
  ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET
    seq = excluded.seq, author_id = excluded.author_id, author_name = excluded.author_name, origin_sensitive = excluded.origin_sensitive
  WHERE turns.seq IS NULL;
END;

DROP TRIGGER turn_feed_edit;

CREATE TRIGGER turn_feed_edit INSTEAD OF INSERT ON turn_feed
WHEN NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'edit'
BEGIN
  INSERT OR IGNORE INTO turns SELECT * FROM turn_index_v1_turns WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND role = 'user' AND message_id = json_extract(NEW.body, '$.targetMessageId');
  INSERT INTO turns (conversation_key, role, message_id, seq, edit_seq, edit_ms, edit_sensitive)
  SELECT k.id, 'user', json_extract(NEW.body, '$.targetMessageId'),
    (SELECT MIN(l.seq) FROM log l INDEXED BY log_source_by_message WHERE l.conversation_key = k.id AND l.kind = 'source' AND json_extract(l.body, '$.messageId') = json_extract(NEW.body, '$.targetMessageId')),
    NEW.seq,
    CASE WHEN at IS NULL THEN NULL ELSE
      CAST(strftime('%s', substr(at, 1, 19) || zone) AS INTEGER) * 1000
      + CASE WHEN substr(at, 20, 1) = '.' THEN CAST(substr(substr(at, 21, length(at) - 20 - length(zone)) || '000', 1, 3) AS INTEGER) ELSE 0 END
    END,
    NEW.sensitive
  FROM conversation_keys k, (
    SELECT at, CASE WHEN substr(at, -1) = 'Z' THEN 'Z' ELSE substr(at, -6) END AS zone
    FROM (SELECT json_extract(NEW.body, '$.editedAt') AS at)
  ) WHERE k.conversation_id = NEW.conversation_id
  ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET
    edit_seq = excluded.edit_seq, edit_ms = excluded.edit_ms, edit_sensitive = excluded.edit_sensitive
  WHERE turns.edit_seq IS NULL OR turns.edit_ms IS NULL OR excluded.edit_ms >= turns.edit_ms;
END;

DROP TRIGGER turn_feed_delete;

CREATE TRIGGER turn_feed_delete INSTEAD OF INSERT ON turn_feed
WHEN NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'delete'
BEGIN
  INSERT OR IGNORE INTO turns SELECT * FROM turn_index_v1_turns WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND role = 'user' AND message_id = json_extract(NEW.body, '$.targetMessageId');
  INSERT INTO turns (conversation_key, role, message_id, seq, deleted)
  SELECT k.id, 'user', json_extract(NEW.body, '$.targetMessageId'),
    (SELECT MIN(l.seq) FROM log l INDEXED BY log_source_by_message WHERE l.conversation_key = k.id AND l.kind = 'source' AND json_extract(l.body, '$.messageId') = json_extract(NEW.body, '$.targetMessageId')),
    1
  FROM conversation_keys k WHERE k.conversation_id = NEW.conversation_id
  ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET deleted = 1 WHERE turns.deleted = 0;
END;
