-- Recall's word index over memory pages, third version: terms written by the service, never computed
-- in SQL (the shards' migrations/shard/0023_turn_terms.sql says why: the 32-deep replace() of
-- `memory_search_text` overflowed the parser stack of common SQLite builds, and the grams were a walk
-- over the text one character at a time).
--
-- `memory_terms` is a contentless FTS5 table (terms and positions, not the page's text, which is
-- `memory_page_versions`'): one row per live page, its rowid the page's `memory_pages.id`, written by
-- the page's writer in the same batch as the version (src/storage/control/memory-pages.ts), which
-- also deletes the previous head's terms. `memory_pages.terms_version` says which version the index
-- holds (NULL: none yet). `scope` holds the agent's token (`a` and its key in `agent_keys`), ANDed
-- with every search's terms, so a search walks that agent's pages only: a contentless table cannot
-- hold the agent's id to filter on, as `memory_fts` did.
--
-- Existing pages are indexed by npm run migrate (scripts/lib/search-backfill.mjs), in batches.

DROP TRIGGER memory_page_versions_index;
DROP VIEW memory_search_rows;
DROP VIEW memory_search_text;
DROP TABLE memory_fts;
DROP TABLE search_positions;
DROP TABLE search_no_space_ranges;

CREATE TRIGGER memory_page_versions_head AFTER INSERT ON memory_page_versions
BEGIN
  INSERT INTO memory_pages (agent_id, path, version) VALUES (NEW.agent_id, NEW.path, NEW.version)
  ON CONFLICT (agent_id, path) DO UPDATE SET version = excluded.version;
END;

ALTER TABLE memory_pages ADD COLUMN terms_version INTEGER;

CREATE TABLE agent_keys (
  id INTEGER PRIMARY KEY,
  agent_id TEXT NOT NULL UNIQUE CHECK (length(agent_id) BETWEEN 1 AND 64)
);
INSERT INTO agent_keys (agent_id) SELECT DISTINCT agent_id FROM memory_page_versions ORDER BY agent_id;

CREATE TRIGGER memory_page_versions_agent_key BEFORE INSERT ON memory_page_versions
BEGIN
  INSERT INTO agent_keys (agent_id) VALUES (NEW.agent_id) ON CONFLICT (agent_id) DO NOTHING;
END;

CREATE VIRTUAL TABLE memory_terms USING fts5(scope, path, content, grams, content = '', tokenize = 'porter unicode61 remove_diacritics 2');

-- What the contentless table holds, readable: each term of each row with its column and position
-- (an operator's view of the index, and what the tests compare with core/search-text). It stores nothing.
CREATE VIRTUAL TABLE memory_terms_vocab USING fts5vocab(memory_terms, 'instance');
