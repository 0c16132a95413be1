-- The turn index, kept at a third of its cost.
--
-- `turn_index` (0013) kept each message's fold as a rowid row, a unique index on (conversation,
-- role, message id) and an index by sequence, each spelling the conversation's text id (a Telegram
-- group's is 34 characters): three entries written per turn, about 250 bytes.
--
-- `turns` keeps the same fold in a WITHOUT ROWID table whose primary key is the fold's key, with
-- the conversation's `conversation_keys` id (0015) in place of its text id: two entries written per
-- turn (the row and its sequence index; a third for a turn with an edit), under 90 bytes. The text
-- columns `turn_index` no longer wrote since 0023 are gone. The fold's rules are 0013's, applied by
-- the same `turn_feed` triggers, now writing `turns`.
--
-- The rows stored before this migration stay in the old table, renamed `turn_index_v1`, until
-- `npm run migrate` moves them a batch at a time (src/storage/shard/table-moves.ts). An event about a
-- message still there first moves that message's row (the triggers below), so the fold always
-- continues from its own state; the move then only copies what no event touched, and the old table
-- lets a row go only once `turns` holds its message. Under the old name is now a view of both,
-- through which a Worker not yet redeployed reads every turn and records an author's search name.

CREATE TABLE turns (
  conversation_key INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  -- The platform message id of a source, or the proposal id of a reply.
  message_id TEXT NOT NULL,
  -- Sequence of the origin event (source or proposal); NULL while only corrections or deliveries
  -- about it have arrived.
  seq INTEGER,
  -- The author's id (a reply's: its agent id), the name a reader would search for, and that name
  -- folded for search when folding changes it (0023).
  author_id TEXT,
  author_name TEXT,
  author_terms TEXT,
  origin_sensitive INTEGER NOT NULL DEFAULT 0 CHECK (origin_sensitive IN (0, 1)),
  -- The winning edit: its sequence and its instant in epoch milliseconds (NULL: none given).
  edit_seq INTEGER,
  edit_ms INTEGER,
  edit_sensitive INTEGER NOT NULL DEFAULT 0 CHECK (edit_sensitive IN (0, 1)),
  deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
  delivered INTEGER NOT NULL DEFAULT 0 CHECK (delivered IN (0, 1)),
  PRIMARY KEY (conversation_key, role, message_id)
) WITHOUT ROWID;

CREATE INDEX turns_by_seq ON turns (conversation_key, seq);
-- A search's candidate row is an edit's: the turn whose winning edit it is.
CREATE INDEX turns_by_edit ON turns (conversation_key, edit_seq) WHERE edit_seq IS NOT NULL;

CREATE TRIGGER turns_immutable_delete BEFORE DELETE ON turns
BEGIN
  SELECT RAISE(ABORT, 'turns: rows follow the log and are never deleted');
END;

ALTER TABLE turn_index RENAME TO turn_index_v1;

DROP TRIGGER turn_index_immutable_delete;

CREATE TRIGGER turn_index_v1_moved_only BEFORE DELETE ON turn_index_v1
WHEN NOT EXISTS (
  SELECT 1 FROM turns t
  WHERE t.conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = OLD.conversation_id)
    AND t.role = OLD.role AND t.message_id = OLD.message_id
)
BEGIN
  SELECT RAISE(ABORT, 'turn_index_v1: a row leaves only once turns holds its message');
END;

-- The old name, for a Worker not yet redeployed: every turn, each once (a row `turns` holds
-- already is read from there). A turn of `turns` has no rowid; its id is its place in the log,
-- `(conversation key << 32) | seq`, as `turn_terms` numbers its rows (0023), and none while it has
-- no origin (a correction that came first), when it is not a turn a search can return.
CREATE VIEW turn_index AS
SELECT (k.id << 32) | t.seq AS id, k.conversation_id AS conversation_id, t.role AS role, t.message_id AS message_id, t.seq AS seq,
  t.author_id AS author_id, t.author_name AS author_name, NULL AS origin_text, t.origin_sensitive AS origin_sensitive,
  t.edit_seq AS edit_seq, t.edit_ms AS edit_ms, NULL AS edit_text, t.edit_sensitive AS edit_sensitive,
  t.deleted AS deleted, t.delivered AS delivered, t.author_terms AS author_terms
FROM turns t JOIN conversation_keys k ON k.id = t.conversation_key
UNION ALL
SELECT v.id, v.conversation_id, v.role, v.message_id, v.seq, v.author_id, v.author_name, v.origin_text, v.origin_sensitive,
  v.edit_seq, v.edit_ms, v.edit_text, v.edit_sensitive, v.deleted, v.delivered, v.author_terms
FROM turn_index_v1 v
WHERE NOT EXISTS (
  SELECT 1 FROM turns t
  WHERE t.conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = v.conversation_id) AND t.role = v.role AND t.message_id = v.message_id
);

-- The one write a Worker not yet redeployed makes under the old name: a source's folded author,
-- in the batch that appended it (so its turn is in `turns`).
CREATE TRIGGER turn_index_author_terms INSTEAD OF UPDATE OF author_terms ON turn_index
BEGIN
  UPDATE turns SET author_terms = NEW.author_terms
  WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = OLD.conversation_id) AND role = OLD.role AND message_id = OLD.message_id;
END;

-- The old table's rows as `turns` holds them: its columns, in its order.
CREATE VIEW turn_index_v1_turns AS
SELECT k.id AS conversation_key, v.role AS role, v.message_id AS message_id, v.seq AS seq, v.author_id AS author_id,
  v.author_name AS author_name, v.author_terms AS author_terms, v.origin_sensitive AS origin_sensitive, v.edit_seq AS edit_seq,
  v.edit_ms AS edit_ms, v.edit_sensitive AS edit_sensitive, v.deleted AS deleted, v.delivered AS delivered
FROM turn_index_v1 v JOIN conversation_keys k ON k.conversation_id = v.conversation_id;

-- The fold's triggers, each writing `turns`, after first moving its message's row from the old
-- table if it is still there.
DROP TRIGGER turn_feed_source;
DROP TRIGGER turn_feed_edit;
DROP TRIGGER turn_feed_delete;
DROP TRIGGER turn_feed_proposal;
DROP TRIGGER turn_feed_delivery;

CREATE TRIGGER turn_feed_source INSTEAD OF INSERT ON turn_feed WHEN NEW.kind = 'source'
BEGIN
  INSERT OR IGNORE INTO turns SELECT * FROM turn_index_v1_turns WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND role = 'user' AND message_id = json_extract(NEW.body, '$.messageId');
  INSERT INTO turns (conversation_key, role, message_id, seq, author_id, author_name, origin_sensitive)
  VALUES (
    (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id), 'user', json_extract(NEW.body, '$.messageId'), NEW.seq,
    json_extract(NEW.body, '$.author.id'),
    COALESCE(json_extract(NEW.body, '$.author.name'), json_extract(NEW.body, '$.author.username')),
    NEW.sensitive
  )
  ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET
    seq = excluded.seq, author_id = excluded.author_id, author_name = excluded.author_name, origin_sensitive = excluded.origin_sensitive
  WHERE turns.seq IS NULL;
END;

-- `editedAt` is read as 0013 reads it (JavaScript's Date.parse: whole milliseconds, the fraction
-- truncated after three digits).
CREATE TRIGGER turn_feed_edit INSTEAD OF INSERT ON turn_feed
WHEN NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'edit'
BEGIN
  INSERT OR IGNORE INTO turns SELECT * FROM turn_index_v1_turns WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND role = 'user' AND message_id = json_extract(NEW.body, '$.targetMessageId');
  INSERT INTO turns (conversation_key, role, message_id, edit_seq, edit_ms, edit_sensitive)
  SELECT (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id), 'user', json_extract(NEW.body, '$.targetMessageId'), NEW.seq,
    CASE WHEN at IS NULL THEN NULL ELSE
      CAST(strftime('%s', substr(at, 1, 19) || zone) AS INTEGER) * 1000
      + CASE WHEN substr(at, 20, 1) = '.' THEN CAST(substr(substr(at, 21, length(at) - 20 - length(zone)) || '000', 1, 3) AS INTEGER) ELSE 0 END
    END,
    NEW.sensitive
  FROM (
    SELECT at, CASE WHEN substr(at, -1) = 'Z' THEN 'Z' ELSE substr(at, -6) END AS zone
    FROM (SELECT json_extract(NEW.body, '$.editedAt') AS at)
  ) WHERE true
  ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET
    edit_seq = excluded.edit_seq, edit_ms = excluded.edit_ms, edit_sensitive = excluded.edit_sensitive
  WHERE turns.edit_seq IS NULL OR turns.edit_ms IS NULL OR excluded.edit_ms >= turns.edit_ms;
END;

CREATE TRIGGER turn_feed_delete INSTEAD OF INSERT ON turn_feed
WHEN NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'delete'
BEGIN
  INSERT OR IGNORE INTO turns SELECT * FROM turn_index_v1_turns WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND role = 'user' AND message_id = json_extract(NEW.body, '$.targetMessageId');
  INSERT INTO turns (conversation_key, role, message_id, deleted)
  VALUES ((SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id), 'user', json_extract(NEW.body, '$.targetMessageId'), 1)
  ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET deleted = 1 WHERE turns.deleted = 0;
END;

CREATE TRIGGER turn_feed_proposal INSTEAD OF INSERT ON turn_feed WHEN NEW.kind = 'proposal'
BEGIN
  INSERT OR IGNORE INTO turns SELECT * FROM turn_index_v1_turns WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND role = 'assistant' AND message_id = json_extract(NEW.body, '$.proposalId');
  INSERT INTO turns (conversation_key, role, message_id, seq, author_id, origin_sensitive)
  VALUES ((SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id), 'assistant', json_extract(NEW.body, '$.proposalId'), NEW.seq, json_extract(NEW.body, '$.agentId'), NEW.sensitive)
  ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET
    seq = excluded.seq, author_id = excluded.author_id, origin_sensitive = excluded.origin_sensitive
  WHERE turns.seq IS NULL;
END;

CREATE TRIGGER turn_feed_delivery INSTEAD OF INSERT ON turn_feed
WHEN NEW.kind = 'delivery' AND json_extract(NEW.body, '$.status') = 'delivered'
BEGIN
  INSERT OR IGNORE INTO turns SELECT * FROM turn_index_v1_turns WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id) AND role = 'assistant' AND message_id = json_extract(NEW.body, '$.proposalId');
  INSERT INTO turns (conversation_key, role, message_id, delivered)
  VALUES ((SELECT id FROM conversation_keys WHERE conversation_id = NEW.conversation_id), 'assistant', json_extract(NEW.body, '$.proposalId'), 1)
  ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET delivered = 1 WHERE turns.delivered = 0;
END;
