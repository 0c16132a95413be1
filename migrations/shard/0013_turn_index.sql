-- Recall over the exact turns of the log: a full-text index of each turn's *effective* text, the
-- text canonical reconstruction (src/core/reconstruction.ts) folds the log into. An edit replaces
-- the indexed text, a deletion removes the turn, a reply is indexed only once it was delivered.
--
-- `turn_index` holds one row per message (`user`: a source's platform message id) or reply
-- (`assistant`: a proposal id), with what the fold needs to decide its effective text and what a
-- search needs to decide whether a given agent may be served it (author, the replying agent,
-- sensitivity). Events reach it through the view `turn_feed`, whose INSTEAD OF triggers apply one
-- event each: the AFTER INSERT trigger on `events` feeds every new event inside the inserting
-- statement, so every writer of the log keeps the index current without a statement of its own,
-- and the end of this file feeds the log already stored, in order, through the same triggers. The
-- triggers on `turn_index` keep `turn_fts` holding exactly the live turns. Both are indexes, not
-- history: rebuilding them from `events` loses nothing.
--
-- The fold's rules, as the triggers apply them (events arrive in sequence order):
--   * the first source of a message id is its origin; a later source reusing the id is ignored;
--   * any deletion removes the message for good;
--   * the latest edit wins: a later `editedAt` instant, then a later sequence (so a new edit wins
--     unless it names an earlier instant than the current one; an edit without `editedAt` counts
--     as before every instant); corrections may precede their message and apply once it arrives;
--   * a turn is sensitive when its source or its winning edit is;
--   * the first proposal of a proposal id is the reply; it is a turn once any delivery says
--     `delivered`, whichever of the two came first.

CREATE TABLE turn_index (
  -- INTEGER PRIMARY KEY: stable under VACUUM, so it can be the turn's rowid in `turn_fts`.
  id INTEGER PRIMARY KEY,
  conversation_id TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  -- The platform message id of a source, or the proposal id of a reply.
  message_id TEXT NOT NULL,
  -- Sequence of the origin event (source or proposal); NULL while only corrections or deliveries
  -- about it have arrived.
  seq INTEGER,
  -- The author's id (a reply's: its agent id) and the name a reader would search for.
  author_id TEXT,
  author_name TEXT,
  origin_text TEXT,
  origin_sensitive INTEGER NOT NULL DEFAULT 0 CHECK (origin_sensitive IN (0, 1)),
  -- The winning edit: its sequence, its instant in epoch milliseconds (NULL: none given), text.
  edit_seq INTEGER,
  edit_ms INTEGER,
  edit_text TEXT,
  edit_sensitive INTEGER NOT NULL DEFAULT 0 CHECK (edit_sensitive IN (0, 1)),
  deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
  delivered INTEGER NOT NULL DEFAULT 0 CHECK (delivered IN (0, 1)),
  UNIQUE (conversation_id, role, message_id)
);

-- The live turns. The conversation is unindexed: every search filters on it.
CREATE VIRTUAL TABLE turn_fts USING fts5(
  conversation_id UNINDEXED,
  author,
  text,
  tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER turn_index_fts_insert AFTER INSERT ON turn_index
WHEN NEW.seq IS NOT NULL AND NEW.deleted = 0 AND (NEW.role = 'user' OR NEW.delivered = 1)
BEGIN
  INSERT INTO turn_fts (rowid, conversation_id, author, text)
  VALUES (NEW.id, NEW.conversation_id, COALESCE(NEW.author_name, NEW.author_id, ''), COALESCE(NEW.edit_text, NEW.origin_text, ''));
END;

CREATE TRIGGER turn_index_fts_update AFTER UPDATE ON turn_index
BEGIN
  DELETE FROM turn_fts WHERE rowid = OLD.id;
  INSERT INTO turn_fts (rowid, conversation_id, author, text)
  SELECT NEW.id, NEW.conversation_id, COALESCE(NEW.author_name, NEW.author_id, ''), COALESCE(NEW.edit_text, NEW.origin_text, '')
  WHERE NEW.seq IS NOT NULL AND NEW.deleted = 0 AND (NEW.role = 'user' OR NEW.delivered = 1);
END;

CREATE TRIGGER turn_index_immutable_delete BEFORE DELETE ON turn_index
BEGIN
  SELECT RAISE(ABORT, 'turn_index: rows follow the log and are never deleted');
END;

-- One event as the index reads it; inserting into the view applies it (the triggers below).
CREATE VIEW turn_feed AS SELECT conversation_id, seq, kind, sensitive, body FROM events WHERE 0;

CREATE TRIGGER turn_feed_source INSTEAD OF INSERT ON turn_feed WHEN NEW.kind = 'source'
BEGIN
  INSERT INTO turn_index (conversation_id, role, message_id, seq, author_id, author_name, origin_text, origin_sensitive)
  VALUES (
    NEW.conversation_id, 'user', json_extract(NEW.body, '$.messageId'), NEW.seq,
    json_extract(NEW.body, '$.author.id'),
    COALESCE(json_extract(NEW.body, '$.author.name'), json_extract(NEW.body, '$.author.username')),
    json_extract(NEW.body, '$.text'), NEW.sensitive
  )
  ON CONFLICT (conversation_id, role, message_id) DO UPDATE SET
    seq = excluded.seq, author_id = excluded.author_id, author_name = excluded.author_name,
    origin_text = excluded.origin_text, origin_sensitive = excluded.origin_sensitive
  WHERE turn_index.seq IS NULL;
END;

-- `editedAt` is `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (the event schema's ISO time with an
-- offset), read as JavaScript's Date.parse reads it: the instant in whole milliseconds, the
-- fraction truncated after three digits (SQLite's own parser would round it).
CREATE TRIGGER turn_feed_edit INSTEAD OF INSERT ON turn_feed
WHEN NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'edit'
BEGIN
  INSERT INTO turn_index (conversation_id, role, message_id, edit_seq, edit_ms, edit_text, edit_sensitive)
  SELECT NEW.conversation_id, 'user', json_extract(NEW.body, '$.targetMessageId'), NEW.seq,
    CASE WHEN at IS NULL THEN NULL ELSE
      CAST(strftime('%s', substr(at, 1, 19) || zone) AS INTEGER) * 1000
      + CASE WHEN substr(at, 20, 1) = '.' THEN CAST(substr(substr(at, 21, length(at) - 20 - length(zone)) || '000', 1, 3) AS INTEGER) ELSE 0 END
    END,
    json_extract(NEW.body, '$.text'), NEW.sensitive
  FROM (
    SELECT at, CASE WHEN substr(at, -1) = 'Z' THEN 'Z' ELSE substr(at, -6) END AS zone
    FROM (SELECT json_extract(NEW.body, '$.editedAt') AS at)
  ) WHERE true
  ON CONFLICT (conversation_id, role, message_id) DO UPDATE SET
    edit_seq = excluded.edit_seq, edit_ms = excluded.edit_ms, edit_text = excluded.edit_text, edit_sensitive = excluded.edit_sensitive
  WHERE turn_index.edit_seq IS NULL OR turn_index.edit_ms IS NULL OR excluded.edit_ms >= turn_index.edit_ms;
END;

CREATE TRIGGER turn_feed_delete INSTEAD OF INSERT ON turn_feed
WHEN NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'delete'
BEGIN
  INSERT INTO turn_index (conversation_id, role, message_id, deleted)
  VALUES (NEW.conversation_id, 'user', json_extract(NEW.body, '$.targetMessageId'), 1)
  ON CONFLICT (conversation_id, role, message_id) DO UPDATE SET deleted = 1 WHERE turn_index.deleted = 0;
END;

CREATE TRIGGER turn_feed_proposal INSTEAD OF INSERT ON turn_feed WHEN NEW.kind = 'proposal'
BEGIN
  INSERT INTO turn_index (conversation_id, role, message_id, seq, author_id, origin_text, origin_sensitive)
  VALUES (
    NEW.conversation_id, 'assistant', json_extract(NEW.body, '$.proposalId'), NEW.seq,
    json_extract(NEW.body, '$.agentId'), json_extract(NEW.body, '$.text'), NEW.sensitive
  )
  ON CONFLICT (conversation_id, role, message_id) DO UPDATE SET
    seq = excluded.seq, author_id = excluded.author_id, origin_text = excluded.origin_text, origin_sensitive = excluded.origin_sensitive
  WHERE turn_index.seq IS NULL;
END;

CREATE TRIGGER turn_feed_delivery INSTEAD OF INSERT ON turn_feed
WHEN NEW.kind = 'delivery' AND json_extract(NEW.body, '$.status') = 'delivered'
BEGIN
  INSERT INTO turn_index (conversation_id, role, message_id, delivered)
  VALUES (NEW.conversation_id, 'assistant', json_extract(NEW.body, '$.proposalId'), 1)
  ON CONFLICT (conversation_id, role, message_id) DO UPDATE SET delivered = 1 WHERE turn_index.delivered = 0;
END;

CREATE TRIGGER events_feed_turn_index AFTER INSERT ON events WHEN NEW.kind <> 'run'
BEGIN
  INSERT INTO turn_feed (conversation_id, seq, kind, sensitive, body) VALUES (NEW.conversation_id, NEW.seq, NEW.kind, NEW.sensitive, NEW.body);
END;

-- The log stored before this migration, each conversation in sequence order, as if appended now.
INSERT INTO turn_feed (conversation_id, seq, kind, sensitive, body)
SELECT conversation_id, seq, kind, sensitive, body FROM events WHERE kind <> 'run' ORDER BY conversation_id, seq;
