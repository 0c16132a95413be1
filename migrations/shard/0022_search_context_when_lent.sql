-- Recall's turn index: a change re-indexes the turns around it only when it changes what they lend.
--
-- Since 0021 a turn's context is the words of the two turns before it and the two after it, and
-- every change to a turn re-indexed the four turns within two places of it. Most changes lend
-- nothing: a reply never lends, and a delivery, or an edit that keeps the text, changes no word a
-- neighbour holds. Each of those re-indexed four turns for nothing: a proposal's append read 50
-- rows where 0015 read 24, a delivery's 61 where it read 32 (bench §2).
--
-- A turn lends when it is placed in the log (has a sequence), a user's, live and not sensitive
-- (0021's view, unchanged). Its neighbours' contexts change only when
--   - it starts or stops lending, or it lends and its text changed; or
--   - it takes a place in the log with turns after it (the windows of the turns around it shift).
-- A turn takes its place as its origin event is appended, so it is the last one: the second case is
-- a guard, not a path. The index itself is unchanged: no row is rebuilt.

DROP TRIGGER turn_index_fts_insert;
DROP TRIGGER turn_index_fts_update;

-- The turn itself, on every change.
CREATE TRIGGER turn_index_fts_insert AFTER INSERT ON turn_index
BEGIN
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows WHERE id = NEW.id;
END;

CREATE TRIGGER turn_index_fts_update AFTER UPDATE ON turn_index
BEGIN
  DELETE FROM turn_fts WHERE rowid = OLD.id;
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows WHERE id = NEW.id;
END;

-- The turns within two places of it, when their context changed with it.
CREATE TRIGGER turn_index_fts_insert_neighbours AFTER INSERT ON turn_index
WHEN NEW.seq IS NOT NULL AND (
  (NEW.role = 'user' AND NEW.deleted = 0 AND NEW.origin_sensitive = 0 AND NEW.edit_sensitive = 0)
  OR EXISTS (SELECT 1 FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq)
)
BEGIN
  DELETE FROM turn_fts WHERE rowid IN (SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 2) UNION ALL SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 2));
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows
  WHERE id IN (SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 2) UNION ALL SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 2));
END;

CREATE TRIGGER turn_index_fts_update_neighbours AFTER UPDATE ON turn_index
WHEN NEW.seq IS NOT NULL AND (
  (OLD.seq IS NOT NULL AND OLD.role = 'user' AND OLD.deleted = 0 AND OLD.origin_sensitive = 0 AND OLD.edit_sensitive = 0)
    IS NOT (NEW.role = 'user' AND NEW.deleted = 0 AND NEW.origin_sensitive = 0 AND NEW.edit_sensitive = 0)
  OR ((NEW.role = 'user' AND NEW.deleted = 0 AND NEW.origin_sensitive = 0 AND NEW.edit_sensitive = 0)
    AND COALESCE(OLD.edit_text, OLD.origin_text, '') IS NOT COALESCE(NEW.edit_text, NEW.origin_text, ''))
  OR (OLD.seq IS NOT NEW.seq AND EXISTS (SELECT 1 FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq))
)
BEGIN
  DELETE FROM turn_fts WHERE rowid IN (SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 2) UNION ALL SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 2));
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows
  WHERE id IN (SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 2) UNION ALL SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 2));
END;
