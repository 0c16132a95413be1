-- Recall's word index over memory pages, second version: the rules of the turn index
-- (migrations/shard/0015_search_index.sql, src/core/search-text.ts) — the porter stemmer, folded
-- Arabic-script letters and digits, and character pairs of scripts written without spaces in `grams`.
-- `memory_search_rows` is the one definition of a live page's index row; the trigger and the
-- rebuild at the end insert from it.

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

CREATE VIEW memory_search_text AS
SELECT p.id AS id, p.agent_id AS agent_id, p.path AS path, CASE WHEN v.content GLOB '*[؀-ۿ‌]*' THEN replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(v.content, char(8204), ''), char(1600), ''), char(1610), char(1740)), char(1609), char(1740)), char(1603), char(1705)), char(1577), char(1607)), char(1728), char(1607)), char(1571), char(1575)), char(1573), char(1575)), char(1570), char(1575)), char(1649), char(1575)), char(1572), char(1608)), char(1776), char(48)), char(1777), char(49)), char(1778), char(50)), char(1779), char(51)), char(1780), char(52)), char(1781), char(53)), char(1782), char(54)), char(1783), char(55)), char(1784), char(56)), char(1785), char(57)), char(1632), char(48)), char(1633), char(49)), char(1634), char(50)), char(1635), char(51)), char(1636), char(52)), char(1637), char(53)), char(1638), char(54)), char(1639), char(55)), char(1640), char(56)), char(1641), char(57)) ELSE v.content END AS content
FROM memory_pages p JOIN memory_page_versions v ON v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version
WHERE v.deleted = 0;

CREATE VIEW memory_search_rows AS
SELECT s.id AS id, s.agent_id AS agent_id, s.path AS path, s.content AS content,
  CASE WHEN (s.content GLOB '*[฀-໿က-႟ក-៿぀-ヿ]*' OR s.content GLOB '*[㐀-䶿一-鿿豈-﫿𠀀-𱍏]*') THEN (
    SELECT group_concat(CASE WHEN nx THEN c || nc ELSE c END, ' ') FROM (
      SELECT c, here, lead(here, 1, 0) OVER w AS nx, lag(here, 1, 0) OVER w AS prev, lead(c) OVER w AS nc FROM (
        SELECT n, substr(s.content, n, 1) AS c,
          EXISTS (SELECT 1 FROM search_no_space_ranges r WHERE unicode(substr(s.content, n, 1)) BETWEEN r.lo AND r.hi) AS here
        FROM search_positions WHERE n <= length(s.content)
      ) WINDOW w AS (ORDER BY n)
    ) WHERE here AND (nx OR NOT prev)
  ) ELSE '' END AS grams
FROM memory_search_text s;

DROP TRIGGER memory_page_versions_index;
DROP TABLE memory_fts;

CREATE VIRTUAL TABLE memory_fts USING fts5(agent_id UNINDEXED, path, content, grams, tokenize = 'porter unicode61 remove_diacritics 2');

CREATE TRIGGER memory_page_versions_index AFTER INSERT ON memory_page_versions
BEGIN
  INSERT INTO memory_pages (agent_id, path, version) VALUES (NEW.agent_id, NEW.path, NEW.version)
  ON CONFLICT (agent_id, path) DO UPDATE SET version = excluded.version;
  DELETE FROM memory_fts
  WHERE rowid = (SELECT id FROM memory_pages WHERE agent_id = NEW.agent_id AND path = NEW.path);
  INSERT INTO memory_fts (rowid, agent_id, path, content, grams)
  SELECT id, agent_id, path, content, grams FROM memory_search_rows WHERE agent_id = NEW.agent_id AND path = NEW.path;
END;

INSERT INTO memory_fts (rowid, agent_id, path, content, grams) SELECT id, agent_id, path, content, grams FROM memory_search_rows ORDER BY id;
