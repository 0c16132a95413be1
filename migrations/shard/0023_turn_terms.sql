-- Recall's word indexes, fourth version: terms written by the service, never computed in SQL.
--
-- Until now SQL views computed what the indexes hold: a 32-deep replace() for the Arabic-script
-- folds, and for scripts written without spaces a walk over the text one character position at a
-- time, each position re-reading the folded view. An append of a long Chinese message took tens of
-- seconds (past D1's 30-second statement limit), the nested replace() overflowed the parser stack of
-- common SQLite builds (Debian 12's 3.40 refused to open the database), and `turn_fts` stored each
-- turn's text again, plus the text of its four neighbours in `context`, and re-indexed those
-- neighbours on every append.
--
-- Now src/core/search-text.ts computes a text's terms once (`searchForm`: the folded text and its
-- grams) and the writer of the event writes them in the same D1 batch (src/storage/shard/turn-terms.ts):
--
-- * `turn_terms` is a contentless FTS5 table (it stores terms and positions, not text): one row per
--   event that carries a text, a source, an edit or a proposal, written once and never changed, as
--   the log is. Its rowid is the event's place in the log, `(conversation key << 32) | seq`, so a
--   conversation's rows are one rowid range and a search is scoped by that range (FTS5 seeks it in
--   each term's list) instead of a scope token. Which row is a turn's current text, and whether the
--   turn is live, `turn_index` says, as before; a search keeps only those rows (an edit's earlier
--   text, a deleted message and an undelivered reply stay indexed, and are never served).
-- * A turn's context (the words of the turns within two places of it) is no longer stored: a search
--   lends it from the neighbours of its candidates (src/storage/recall-reads.ts), so an append writes
--   its own row only.
-- * `turn_index` keeps the fold of each message; its text columns are no longer written (the text is
--   the log's), and npm run migrate clears the ones stored before (scripts/lib/search-backfill.mjs).
--   `author_terms` holds an author's folded name when folding changes it, for an edit's row.
-- * `conversations.texts` counts the rows `turn_terms` holds for the conversation (bm25's number of
--   documents), kept by the log's insert trigger.
-- * `conversation_memory_terms` is contentless likewise: the live head of each extracted page,
--   written by extraction beside the version (src/storage/shard/extractions.ts), which also deletes
--   the previous head's terms. `conversation_memory_pages.terms_version` says which version the
--   index holds for the page (NULL: none yet).
--
-- Existing data: `search_backfill` lists each conversation stored before this migration with the
-- last sequence it had; npm run migrate indexes those events and the live pages, in batches.

-- The old machinery, every view and trigger that computed terms in SQL.
DROP TRIGGER turn_index_fts_insert;
DROP TRIGGER turn_index_fts_update;
DROP TRIGGER turn_index_fts_insert_neighbours;
DROP TRIGGER turn_index_fts_update_neighbours;
DROP VIEW turn_search_rows;
DROP VIEW turn_search_terms;
DROP VIEW turn_search_text;
DROP TABLE turn_fts;
DROP TRIGGER conversation_memory_versions_index;
DROP VIEW conversation_memory_search_rows;
DROP VIEW conversation_memory_search_text;
DROP TABLE conversation_memory_fts;
DROP TABLE search_positions;
DROP TABLE search_no_space_ranges;

-- The fold of each message, without its text.
DROP TRIGGER turn_feed_source;
DROP TRIGGER turn_feed_edit;
DROP TRIGGER turn_feed_proposal;

CREATE TRIGGER turn_feed_source INSTEAD OF INSERT ON turn_feed WHEN NEW.kind = 'source'
BEGIN
  INSERT INTO turn_index (conversation_id, role, message_id, seq, author_id, author_name, origin_sensitive)
  VALUES (
    NEW.conversation_id, 'user', json_extract(NEW.body, '$.messageId'), NEW.seq,
    json_extract(NEW.body, '$.author.id'),
    COALESCE(json_extract(NEW.body, '$.author.name'), json_extract(NEW.body, '$.author.username')),
    NEW.sensitive
  )
  ON CONFLICT (conversation_id, role, message_id) DO UPDATE SET
    seq = excluded.seq, author_id = excluded.author_id, author_name = excluded.author_name, origin_sensitive = excluded.origin_sensitive
  WHERE turn_index.seq IS NULL;
END;

-- `editedAt` is read as migrations/shard/0013 reads it (JavaScript's Date.parse, whole milliseconds).
CREATE TRIGGER turn_feed_edit INSTEAD OF INSERT ON turn_feed
WHEN NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'edit'
BEGIN
  INSERT INTO turn_index (conversation_id, role, message_id, edit_seq, edit_ms, edit_sensitive)
  SELECT NEW.conversation_id, 'user', json_extract(NEW.body, '$.targetMessageId'), NEW.seq,
    CASE WHEN at IS NULL THEN NULL ELSE
      CAST(strftime('%s', substr(at, 1, 19) || zone) AS INTEGER) * 1000
      + CASE WHEN substr(at, 20, 1) = '.' THEN CAST(substr(substr(at, 21, length(at) - 20 - length(zone)) || '000', 1, 3) AS INTEGER) ELSE 0 END
    END,
    NEW.sensitive
  FROM (
    SELECT at, CASE WHEN substr(at, -1) = 'Z' THEN 'Z' ELSE substr(at, -6) END AS zone
    FROM (SELECT json_extract(NEW.body, '$.editedAt') AS at)
  ) WHERE true
  ON CONFLICT (conversation_id, role, message_id) DO UPDATE SET
    edit_seq = excluded.edit_seq, edit_ms = excluded.edit_ms, edit_sensitive = excluded.edit_sensitive
  WHERE turn_index.edit_seq IS NULL OR turn_index.edit_ms IS NULL OR excluded.edit_ms >= turn_index.edit_ms;
END;

CREATE TRIGGER turn_feed_proposal INSTEAD OF INSERT ON turn_feed WHEN NEW.kind = 'proposal'
BEGIN
  INSERT INTO turn_index (conversation_id, role, message_id, seq, author_id, origin_sensitive)
  VALUES (NEW.conversation_id, 'assistant', json_extract(NEW.body, '$.proposalId'), NEW.seq, json_extract(NEW.body, '$.agentId'), NEW.sensitive)
  ON CONFLICT (conversation_id, role, message_id) DO UPDATE SET
    seq = excluded.seq, author_id = excluded.author_id, origin_sensitive = excluded.origin_sensitive
  WHERE turn_index.seq IS NULL;
END;

ALTER TABLE turn_index ADD COLUMN author_terms TEXT;

-- A search's candidate row is an edit's: the turn whose winning edit it is.
CREATE INDEX turn_index_by_edit ON turn_index (conversation_id, edit_seq) WHERE edit_seq IS NOT NULL;

ALTER TABLE conversations ADD COLUMN texts INTEGER NOT NULL DEFAULT 0 CHECK (texts >= 0);

DROP TRIGGER events_high_water;
CREATE TRIGGER events_high_water AFTER INSERT ON events
BEGIN
  UPDATE conversations
  SET last_seq = NEW.seq,
      texts = texts + (NEW.kind IN ('source', 'proposal') OR (NEW.kind = 'correction' AND json_extract(NEW.body, '$.action') = 'edit'))
  WHERE id = NEW.conversation_id;
END;

CREATE VIRTUAL TABLE turn_terms USING fts5(author, text, grams, content = '', tokenize = 'porter unicode61 remove_diacritics 2');

-- Extracted pages: the head as before, its terms written by extraction.
ALTER TABLE conversation_memory_pages ADD COLUMN terms_version INTEGER;

CREATE TRIGGER conversation_memory_versions_head AFTER INSERT ON conversation_memory_versions
BEGIN
  INSERT INTO conversation_memory_pages (conversation_id, agent_id, path, version) VALUES (NEW.conversation_id, NEW.agent_id, NEW.path, NEW.version)
  ON CONFLICT (conversation_id, agent_id, path) DO UPDATE SET version = excluded.version;
END;

-- `scope`: the conversation's token and the agent's (`k` and `a` and their keys), as 0018 had them.
CREATE VIRTUAL TABLE conversation_memory_terms USING fts5(scope, path, content, grams, content = '', tokenize = 'porter unicode61 remove_diacritics 2');

-- What npm run migrate still has to index: each conversation's events through `through_seq`
-- (done through `done_seq`), then the pages with no `terms_version`.
CREATE TABLE search_backfill (
  conversation_id TEXT PRIMARY KEY,
  through_seq INTEGER NOT NULL CHECK (through_seq >= 1),
  done_seq INTEGER NOT NULL DEFAULT 0 CHECK (done_seq BETWEEN 0 AND through_seq)
);
INSERT INTO search_backfill (conversation_id, through_seq) SELECT id, last_seq FROM conversations WHERE last_seq > 0;

-- What the contentless tables hold, readable: each term of each row with its column and position
-- (an operator's view of the index, and what the tests compare with core/search-text). They store nothing.
CREATE VIRTUAL TABLE turn_terms_vocab USING fts5vocab(turn_terms, 'instance');
CREATE VIRTUAL TABLE conversation_memory_terms_vocab USING fts5vocab(conversation_memory_terms, 'instance');
