-- A skipped run and a source, kept at the size of what they say.
--
-- Every source a compactor serves below its trigger leaves a content-dark skipped run in the log
-- (about half of a conversation's events). Its key, `run:pf_<compactor>_<source seq>:skipped`, was
-- stored in its row and again in the key's index entry, and its body (since 0031 the array of the
-- six values it does not derive, src/core/stored-body.ts) named the compactor and the reason again:
-- some 230 bytes an event for a record of three numbers.
--
-- Now the row spells its key as `<compactor key> <source seq>` (the compactor's `compactor_keys`
-- id: a space is in no key a client may give, src/core/events.ts; a compactor gets its id from its
-- first skipped run spelled whole once the log is spelled short, `log_compactor_key`, so an append
-- costs no statement more) and its body as the three sizes
-- (`[activeChars, activeMessages, triggerInputChars]`), the reason after them only when it is not
-- `below_trigger`. A read spells the key back (src/storage/shard/events.ts, `eventColumns`) and
-- the body from it, so the event, its key and its hash are the ones appended: the hash covers the
-- canonical event, never how a row spells it. The key's unique index still holds one skipped run
-- per compactor and source, in either spelling (`log_skipped_run_once`).
--
-- A source's body is stored as `{"a":[…],"messageId":…,"text":…}`: its message id and text under
-- their names (the index by message id, the turn index and search read them), every other value in
-- `a` in a fixed order (src/core/stored-body.ts, `SOURCE_FIELDS`; the time it was sent in epoch
-- milliseconds), where the canonical object spelled its field names again in every row. It reads
-- back as the canonical object; `turn_feed_source` reads the author from either form.
--
-- A Worker from before this migration cannot read the short spelling, so while one may still be
-- running the log gets the long one: `log_spelling.short` is 0, and `npm run migrate --
-- --remote --release` (the last step of `npm run deploy`, after the upload) sets it to 1;
-- `npm run migrate` on a local database at once. A database that holds no conversation yet starts
-- at 1. Rows stored before keep their spelling, and read as they did.

CREATE TABLE compactor_keys (
  id INTEGER PRIMARY KEY,
  compactor_id TEXT NOT NULL UNIQUE CHECK (length(compactor_id) BETWEEN 1 AND 64 AND compactor_id NOT GLOB '*[^A-Za-z0-9._-]*')
);

CREATE TABLE log_spelling (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  short INTEGER NOT NULL CHECK (short IN (0, 1))
);
INSERT INTO log_spelling (id, short) SELECT 1, NOT EXISTS (SELECT 1 FROM conversations);

-- One skipped run per compactor and source whichever way either is spelled: a short spelling is not
-- stored where the long one is, nor the long one where the short one is (an append retried across
-- the release, or a Worker from before it). The long key's middle is `<compactor>_<source seq>`,
-- the source's number the digits it ends with.
CREATE TRIGGER log_skipped_run_once BEFORE INSERT ON log
WHEN NEW.kind = 'run' AND (
  (instr(NEW.idempotency_key, ' ') > 0 AND EXISTS (
    SELECT 1 FROM compactor_keys c JOIN log l ON l.conversation_key = NEW.conversation_key
      AND l.idempotency_key = 'run:pf_' || c.compactor_id || '_' || substr(NEW.idempotency_key, instr(NEW.idempotency_key, ' ') + 1) || ':skipped'
    WHERE c.id = CAST(substr(NEW.idempotency_key, 1, instr(NEW.idempotency_key, ' ') - 1) AS INTEGER)))
  OR (NEW.idempotency_key GLOB 'run:pf_?*_[0-9]*:skipped' AND EXISTS (
    SELECT 1 FROM (SELECT substr(NEW.idempotency_key, 8, length(NEW.idempotency_key) - 15) AS middle) m
      JOIN compactor_keys c ON c.compactor_id = substr(m.middle, 1, length(rtrim(m.middle, '0123456789')) - 1)
      JOIN log l ON l.conversation_key = NEW.conversation_key
        AND l.idempotency_key = c.id || ' ' || substr(m.middle, length(rtrim(m.middle, '0123456789')) + 1)))
)
BEGIN
  SELECT RAISE(IGNORE);
END;

-- A compactor's key, from the first skipped run of it stored whole (its body's first value names it)
-- once the log is spelled short: the runs after it are spelled short. An id the key's CHECK refuses
-- is left out (OR IGNORE), and its runs stay whole.
CREATE TRIGGER log_compactor_key AFTER INSERT ON log
WHEN NEW.kind = 'run' AND NEW.idempotency_key GLOB 'run:pf_?*_[0-9]*:skipped' AND substr(NEW.body, 1, 1) = '['
  AND (SELECT short FROM log_spelling WHERE id = 1) = 1
BEGIN
  INSERT OR IGNORE INTO compactor_keys (compactor_id) VALUES (json_extract(NEW.body, '$[0]'));
END;

-- The turn index's fold of a source, reading its author from the canonical body or the short one.
DROP TRIGGER turn_feed_source;

CREATE TRIGGER turn_feed_source INSTEAD OF INSERT ON turn_feed WHEN NEW.kind = 'source'
BEGIN
  INSERT OR IGNORE INTO turns SELECT * FROM turn_index_v1_turns WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND role = 'user' AND message_id = json_extract(NEW.body, '$.messageId');
  INSERT INTO turns (conversation_key, role, message_id, seq, author_id, author_name, origin_sensitive)
  VALUES (
    (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id), 'user', json_extract(NEW.body, '$.messageId'), NEW.seq,
    COALESCE(json_extract(NEW.body, '$.author.id'), json_extract(NEW.body, '$.a[0]')),
    COALESCE(json_extract(NEW.body, '$.author.name'), json_extract(NEW.body, '$.author.username'), json_extract(NEW.body, '$.a[1]'), json_extract(NEW.body, '$.a[2]')),
    NEW.sensitive
  )
  ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET
    seq = excluded.seq, author_id = excluded.author_id, author_name = excluded.author_name, origin_sensitive = excluded.origin_sensitive
  WHERE turns.seq IS NULL;
END;
