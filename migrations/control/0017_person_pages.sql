-- The control database's memory pages are the pages people write for an agent
-- (`PUT /v1/agents/{agent}/memory/{path}`), and nothing else. Extracted memory is kept with the
-- conversation it was said in, on that conversation's shard (migrations/shard/0016), so the control
-- database no longer grows with chat volume.
--
-- Extraction used to write agent-wide pages under `extracted/` here (with memory_provenance,
-- migrations/control/0012), and recall served them in every conversation of the agent, including
-- conversations the agent no longer serves. Those versions and their provenance stay stored (the
-- tables refuse UPDATE and DELETE, and history is never deleted), but they leave the head and the
-- index: both are derived from the versions and hold no history, and without a head or an index row
-- no listing, read of the current page, search or recall can reach them.
DELETE FROM memory_fts WHERE rowid IN (SELECT id FROM memory_pages WHERE substr(path, 1, 10) = 'extracted/');
DELETE FROM memory_pages WHERE substr(path, 1, 10) = 'extracted/';

-- And none can be written again: the namespace is extraction's, and extraction writes on shards.
CREATE TRIGGER memory_page_versions_person_only BEFORE INSERT ON memory_page_versions
WHEN substr(NEW.path, 1, 10) = 'extracted/'
BEGIN
  SELECT RAISE(ABORT, 'memory_page_versions: extracted pages live with their conversation, on its shard');
END;
