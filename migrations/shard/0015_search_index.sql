-- Recall's word index, second version (the rules: src/core/search-text.ts).
--
-- * English word forms: the porter stemmer over unicode61, on the indexed text and on the query's
--   terms alike (donated, donate → donat).
-- * Scripts written without spaces (Chinese, Japanese, Thai…): unicode61 makes one token of a whole
--   run, so no word inside a sentence could be found. The `grams` column holds each run's
--   overlapping character pairs (a run of one: the character), the usual bigram indexing of CJK.
-- * Arabic-script letters typed differently by Persian and Arabic keyboards, their digits, the
--   zero-width non-joiner and tatweel are folded (the nested replace() in `turn_search_text`, applied
--   only to text with a character of the Arabic block or a ZWNJ).
-- * Scoped in the index: `scope` holds one token per conversation (`k` and the conversation's key
--   in `conversation_keys`), and every search ANDs it with its terms, so FTS5 walks the
--   conversation's rows, not every matching row of every conversation on the shard.
--
-- * Context: each turn is also indexed with the words of its neighbours (`context`, weighted below
--   its own text by the searches), so a reply that answers a question is found by the question's words.
--
-- `turn_search_rows` is the one definition of what a live turn's index row holds; the triggers and
-- the rebuild at the end insert from it.

-- The rules of src/core/search-text.ts, as data the triggers read: the ranges of the scripts
-- written without spaces, and 1…4,096 (MAX_GRAM_POSITIONS) to walk a text's characters with.
-- (The GLOBs that skip the walk for text without such characters are split in two: D1 refuses a
-- pattern of over 50 bytes.)
CREATE TABLE search_no_space_ranges (lo INTEGER PRIMARY KEY, hi INTEGER NOT NULL CHECK (hi >= lo));
INSERT INTO search_no_space_ranges (lo, hi) VALUES
  (3584, 3839), (4096, 4255), (6016, 6143), (12352, 12543), (13312, 19903), (19968, 40959), (63744, 64255), (131072, 201551);

CREATE TABLE search_positions (n INTEGER PRIMARY KEY);
WITH RECURSIVE p (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM p WHERE n < 4096)
INSERT INTO search_positions (n) SELECT n FROM p;

-- A stable integer per conversation (INTEGER PRIMARY KEY: VACUUM never renumbers it), for the scope token.
CREATE TABLE conversation_keys (id INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL UNIQUE);
INSERT INTO conversation_keys (conversation_id) SELECT id FROM conversations ORDER BY created_at, id;
CREATE TRIGGER conversations_key AFTER INSERT ON conversations
BEGIN
  INSERT OR IGNORE INTO conversation_keys (conversation_id) VALUES (NEW.id);
END;

CREATE VIEW turn_search_text AS
SELECT i.id AS id, i.conversation_id AS conversation_id, i.seq AS seq,
  CASE WHEN COALESCE(i.author_name, i.author_id, '') GLOB '*[؀-ۿ‌]*' THEN replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(COALESCE(i.author_name, i.author_id, ''), char(8204), ''), char(1600), ''), char(1610), char(1740)), char(1609), char(1740)), char(1603), char(1705)), char(1577), char(1607)), char(1728), char(1607)), char(1571), char(1575)), char(1573), char(1575)), char(1570), char(1575)), char(1649), char(1575)), char(1572), char(1608)), char(1776), char(48)), char(1777), char(49)), char(1778), char(50)), char(1779), char(51)), char(1780), char(52)), char(1781), char(53)), char(1782), char(54)), char(1783), char(55)), char(1784), char(56)), char(1785), char(57)), char(1632), char(48)), char(1633), char(49)), char(1634), char(50)), char(1635), char(51)), char(1636), char(52)), char(1637), char(53)), char(1638), char(54)), char(1639), char(55)), char(1640), char(56)), char(1641), char(57)) ELSE COALESCE(i.author_name, i.author_id, '') END AS author,
  CASE WHEN COALESCE(i.edit_text, i.origin_text, '') GLOB '*[؀-ۿ‌]*' THEN replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(COALESCE(i.edit_text, i.origin_text, ''), char(8204), ''), char(1600), ''), char(1610), char(1740)), char(1609), char(1740)), char(1603), char(1705)), char(1577), char(1607)), char(1728), char(1607)), char(1571), char(1575)), char(1573), char(1575)), char(1570), char(1575)), char(1649), char(1575)), char(1572), char(1608)), char(1776), char(48)), char(1777), char(49)), char(1778), char(50)), char(1779), char(51)), char(1780), char(52)), char(1781), char(53)), char(1782), char(54)), char(1783), char(55)), char(1784), char(56)), char(1785), char(57)), char(1632), char(48)), char(1633), char(49)), char(1634), char(50)), char(1635), char(51)), char(1636), char(52)), char(1637), char(53)), char(1638), char(54)), char(1639), char(55)), char(1640), char(56)), char(1641), char(57)) ELSE COALESCE(i.edit_text, i.origin_text, '') END AS text
FROM turn_index i
WHERE i.seq IS NOT NULL AND i.deleted = 0 AND (i.role = 'user' OR i.delivered = 1);

CREATE VIEW turn_search_terms AS
SELECT s.id AS id, s.conversation_id AS conversation_id, s.seq AS seq, s.author AS author, s.text AS text,
  CASE WHEN (s.text GLOB '*[฀-໿က-႟ក-៿぀-ヿ]*' OR s.text GLOB '*[㐀-䶿一-鿿豈-﫿𠀀-𱍏]*') THEN (
    SELECT group_concat(CASE WHEN nx THEN c || nc ELSE c END, ' ') FROM (
      SELECT c, here, lead(here, 1, 0) OVER w AS nx, lag(here, 1, 0) OVER w AS prev, lead(c) OVER w AS nc FROM (
        SELECT n, substr(s.text, n, 1) AS c,
          EXISTS (SELECT 1 FROM search_no_space_ranges r WHERE unicode(substr(s.text, n, 1)) BETWEEN r.lo AND r.hi) AS here
        FROM search_positions WHERE n <= length(s.text)
      ) WINDOW w AS (ORDER BY n)
    ) WHERE here AND (nx OR NOT prev)
  ) ELSE '' END AS grams
FROM turn_search_text s;

-- A turn's context: the text (and grams) of the turns just before and after it in the log, the
-- message it answers and the one that answers it, which often hold the words a later question uses
-- ("have you tried martial arts?" / "yes, kickboxing"). A neighbour lends its words only when any
-- reader of the conversation may be served it: a live, non-sensitive message, never a reply (whose
-- readers depend on the agent). Only the adjacent turns count, so a change to one turn re-indexes
-- exactly two others. The context ranks the turn; it is never served.
CREATE VIEW turn_search_rows AS
SELECT t.id AS id, (SELECT 'k' || k.id FROM conversation_keys k WHERE k.conversation_id = t.conversation_id) AS scope,
  t.author AS author, t.text AS text, t.grams AS grams,
  trim(
    COALESCE((SELECT n.text || ' ' || n.grams FROM turn_index c JOIN turn_search_terms n ON n.id = c.id WHERE c.id = (SELECT a.id FROM turn_index a WHERE a.conversation_id = t.conversation_id AND a.seq < t.seq ORDER BY a.seq DESC LIMIT 1) AND c.role = 'user' AND c.deleted = 0 AND c.origin_sensitive = 0 AND c.edit_sensitive = 0), '') || ' ' ||
    COALESCE((SELECT n.text || ' ' || n.grams FROM turn_index c JOIN turn_search_terms n ON n.id = c.id WHERE c.id = (SELECT a.id FROM turn_index a WHERE a.conversation_id = t.conversation_id AND a.seq > t.seq ORDER BY a.seq LIMIT 1) AND c.role = 'user' AND c.deleted = 0 AND c.origin_sensitive = 0 AND c.edit_sensitive = 0), '')
  ) AS context
FROM turn_search_terms t;

-- Neighbours are sought by sequence within the conversation.
CREATE INDEX turn_index_by_seq ON turn_index (conversation_id, seq);

DROP TRIGGER turn_index_fts_insert;
DROP TRIGGER turn_index_fts_update;
DROP TABLE turn_fts;

CREATE VIRTUAL TABLE turn_fts USING fts5(scope, author, text, grams, context, tokenize = 'porter unicode61 remove_diacritics 2');

CREATE TRIGGER turn_index_fts_insert AFTER INSERT ON turn_index
BEGIN
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows WHERE id = NEW.id;
  -- The turns before and after it: their context changed with it.
  DELETE FROM turn_fts WHERE rowid IN ((SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 1), (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 1));
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows
  WHERE id IN ((SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 1), (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 1));
END;

CREATE TRIGGER turn_index_fts_update AFTER UPDATE ON turn_index
BEGIN
  DELETE FROM turn_fts WHERE rowid = OLD.id;
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows WHERE id = NEW.id;
  -- The turns before and after it: their context changed with it.
  DELETE FROM turn_fts WHERE rowid IN ((SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 1), (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 1));
  INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows
  WHERE id IN ((SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq < NEW.seq ORDER BY a.seq DESC LIMIT 1), (SELECT a.id FROM turn_index a WHERE a.conversation_id = NEW.conversation_id AND a.seq > NEW.seq ORDER BY a.seq LIMIT 1));
END;

INSERT INTO turn_fts (rowid, scope, author, text, grams, context) SELECT id, scope, author, text, grams, context FROM turn_search_rows ORDER BY id;
