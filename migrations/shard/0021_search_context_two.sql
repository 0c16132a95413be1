-- Recall's turn index, third version: a turn's context is the words of the two turns before it and
-- the two after it in the log, not one on each side.
--
-- In a real chat the answer is often a turn or two away from the words a later question uses: a
-- question, a "really?", then the answer; or a statement, a reaction, then its detail. On LoCoMo's
-- eight public conversations (bench §12, 1,680 questions), a replica of this index in Node's SQLite
-- served an evidence turn for 87.8% of the questions with one neighbour on each side, 89.8% with two
-- and 89.3% with three; the bench itself went from 87.5% to 89.5% with two and the own-words nudge
-- of src/core/recall-rank.ts (docs/MEMORY.md). The context still ranks a turn below its own words
-- (the searches weight it half) and is never served.
--
-- What a neighbour lends is unchanged: the text (and grams) of a live, non-sensitive message, never
-- a reply. A change to one turn now re-indexes the four turns within two places of it (an append,
-- the two before it). The rules of the words themselves are 0015's (src/core/search-text.ts).

DROP TRIGGER turn_index_fts_insert;
DROP TRIGGER turn_index_fts_update;
DROP VIEW turn_search_rows;

CREATE VIEW turn_search_rows AS
SELECT t.id AS id, (SELECT 'k' || k.id FROM conversation_keys k WHERE k.conversation_id = t.conversation_id) AS scope,
  t.author AS author, t.text AS text, t.grams AS grams,
  COALESCE((
    SELECT group_concat(trim(n.text || ' ' || n.grams), ' ') FROM turn_index c JOIN turn_search_terms n ON n.id = c.id
    WHERE c.id IN (SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = t.conversation_id AND a.seq < t.seq ORDER BY a.seq DESC LIMIT 2) UNION ALL SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = t.conversation_id AND a.seq > t.seq ORDER BY a.seq LIMIT 2))
      AND c.role = 'user' AND c.deleted = 0 AND c.origin_sensitive = 0 AND c.edit_sensitive = 0
  ), '') AS context
FROM turn_search_terms t;

CREATE TRIGGER turn_index_fts_insert AFTER INSERT ON turn_index
BEGIN
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows WHERE id = NEW.id;
  -- The turns within two places of it: their context changed with it.
  DELETE FROM turn_fts WHERE rowid IN (SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 2) UNION ALL SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 2));
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows
  WHERE id IN (SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 2) UNION ALL SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 2));
END;

CREATE TRIGGER turn_index_fts_update AFTER UPDATE ON turn_index
BEGIN
  DELETE FROM turn_fts WHERE rowid = OLD.id;
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows WHERE id = NEW.id;
  -- The turns within two places of it: their context changed with it.
  DELETE FROM turn_fts WHERE rowid IN (SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 2) UNION ALL SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 2));
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows
  WHERE id IN (SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 2) UNION ALL SELECT id FROM (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 2));
END;

DELETE FROM turn_fts;
INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows ORDER BY id;
