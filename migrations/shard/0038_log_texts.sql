-- A long text kept beside the log's row, not in it.
--
-- The log (0031) is a WITHOUT ROWID table, clustered on (conversation key, seq). SQLite keeps such a
-- row whole in its b-tree's cells up to about 1,000 bytes; of a longer one it keeps about 500 bytes
-- there and the rest on overflow pages of its own, the last of them 4,096 bytes however little of it
-- is used. A message of one to four thousand bytes took a page of its own: 4,915 bytes for a message
-- of 984 (330 Chinese characters) or of 2,000 (test/schema/log-texts.test.ts), and a message's
-- UTF-8 bytes decide it, so a Chinese message reaches it at a third of a Latin one's length.
--
-- A text of more than 512 bytes (a source's, an edit's, a reply's: the body's `text`) is now kept in
-- `log_texts`, a rowid table, whose row is kept whole in its leaf up to about 4,000 bytes: its id is
-- the log row's `(conversation key << 32) | seq`, its text the JSON string the body spelled (quotes
-- and escapes as they were). The log's row keeps the body with `text` as the number 0, which no
-- body spells (a text is a string), and a row so spelled is refused unless its text is kept
-- (`log_text_kept`). A read puts the text back before anyone parses the body
-- (src/storage/shard/log-texts.ts, `bodyColumn`, `logText`), so the event, its body and its hash are
-- the ones appended: the hash covers the canonical event, never how a row spells it. Rows stored
-- before keep their text, and read as they did.
--
-- A Worker from before this migration reads the body's text from the log's row only, so while one
-- may still be running texts stay there: `log_texts_mode.apart` is 0, and `npm run migrate --
-- --remote --release` (the last step of `npm run deploy`, after the upload) sets it to 1; `npm run
-- migrate` on a local database at once. A database that holds no conversation yet starts at 1.

CREATE TABLE log_texts (
  -- The log row's (conversation key << 32) | seq.
  id INTEGER PRIMARY KEY CHECK (id > 0),
  -- The text as the body's JSON string spelled it.
  text TEXT NOT NULL CHECK (substr(text, 1, 1) = '"')
);

CREATE TRIGGER log_texts_immutable_update BEFORE UPDATE ON log_texts
BEGIN
  SELECT RAISE(ABORT, 'log_texts: rows are immutable');
END;

CREATE TRIGGER log_texts_immutable_delete BEFORE DELETE ON log_texts
BEGIN
  SELECT RAISE(ABORT, 'log_texts: rows are immutable');
END;

-- (A row whose key is stored already inserts nothing, and keeps no text: a retried append.) A row
-- from seq 2^32 on keeps its text: its id would name the next conversation's place.
CREATE TRIGGER log_text_kept BEFORE INSERT ON log
WHEN NEW.kind IN ('source', 'proposal', 'correction') AND json_type(NEW.body, '$.text') = 'integer'
  AND (NEW.seq >= 4294967296 OR NOT EXISTS (SELECT 1 FROM log_texts WHERE id = (NEW.conversation_key << 32) | NEW.seq))
  AND NOT EXISTS (SELECT 1 FROM log WHERE conversation_key = NEW.conversation_key AND idempotency_key = NEW.idempotency_key)
BEGIN
  SELECT RAISE(ABORT, 'log: a text kept apart must be in log_texts');
END;

CREATE TABLE log_texts_mode (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  apart INTEGER NOT NULL CHECK (apart IN (0, 1))
);
INSERT INTO log_texts_mode (id, apart) SELECT 1, NOT EXISTS (SELECT 1 FROM conversations);
