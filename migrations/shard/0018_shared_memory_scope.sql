-- Memory an agent shares across its conversations (an opt-in of its declaration, decided by
-- src/core/memory-privacy.ts) is searched on each shard over every conversation of the agent, not
-- one: so each extracted page's index row also carries its agent's scope token, `a` and the agent's
-- key in `agent_keys`, beside the conversation's `k` token. A shared search ANDs the agent's token
-- with its terms and walks only that agent's pages on the shard, as a conversation's search walks
-- only that conversation's (migrations/shard/0016_conversation_memory.sql).

CREATE TABLE agent_keys (
  id INTEGER PRIMARY KEY,
  agent_id TEXT NOT NULL UNIQUE CHECK (length(agent_id) BETWEEN 1 AND 64)
);

INSERT INTO agent_keys (agent_id) SELECT DISTINCT agent_id FROM conversation_memory_versions ORDER BY agent_id;

-- Every conversation a page is kept with has its key already (0015 gives one to each conversation
-- as it is stored); a page's agent gets one when its first version is.
CREATE TRIGGER conversation_memory_versions_agent_key BEFORE INSERT ON conversation_memory_versions
BEGIN
  INSERT INTO agent_keys (agent_id) VALUES (NEW.agent_id) ON CONFLICT (agent_id) DO NOTHING;
END;

DROP VIEW conversation_memory_search_rows;

CREATE VIEW conversation_memory_search_rows AS
SELECT s.id AS id, s.conversation_id AS conversation_id, s.agent_id AS agent_id,
  (SELECT 'k' || k.id FROM conversation_keys k WHERE k.conversation_id = s.conversation_id)
    || ' a' || (SELECT a.id FROM agent_keys a WHERE a.agent_id = s.agent_id) AS scope,
  s.path AS path, s.content AS content,
  CASE WHEN (s.content GLOB '*[฀-໿က-႟ក-៿぀-ヿ]*' OR s.content GLOB '*[㐀-䶿一-鿿豈-﫿𠀀-𱍏]*') THEN (
    SELECT group_concat(CASE WHEN nx THEN c || nc ELSE c END, ' ') FROM (
      SELECT c, here, lead(here, 1, 0) OVER w AS nx, lag(here, 1, 0) OVER w AS prev, lead(c) OVER w AS nc FROM (
        SELECT n, substr(s.content, n, 1) AS c,
          EXISTS (SELECT 1 FROM search_no_space_ranges r WHERE unicode(substr(s.content, n, 1)) BETWEEN r.lo AND r.hi) AS here
        FROM search_positions WHERE n <= length(s.content)
      ) WINDOW w AS (ORDER BY n)
    ) WHERE here AND (nx OR NOT prev)
  ) ELSE '' END AS grams
FROM conversation_memory_search_text s;

-- The index rows again, each with both tokens (the trigger that writes them reads the view above).
DELETE FROM conversation_memory_fts;
INSERT INTO conversation_memory_fts (rowid, scope, path, content, grams)
SELECT id, scope, path, content, grams FROM conversation_memory_search_rows;
