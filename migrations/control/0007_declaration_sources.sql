-- Which declarations serve a conversation, found by index instead of by reading and parsing every
-- agent's declaration on each append and context call.
--
-- One row per source pattern of each declaration revision (the agent's `sources`; the pair check
-- makes the compactor's equal). A pattern is an exact conversation id, or a prefix ending in `*`
-- (`*` alone: every conversation). `prefix` is the pattern without its `*`, or the id itself, so a
-- conversation is served by the patterns whose (prefix, is_prefix) is (its id, 0) or (one of its
-- prefixes, 1): at most one index probe per prefix length. Rows are written with the revision, in
-- the same transaction, and never change (revisions never change).
CREATE TABLE declaration_sources (
  agent_id TEXT NOT NULL,
  revision INTEGER NOT NULL,
  pattern TEXT NOT NULL,
  prefix TEXT NOT NULL,
  is_prefix INTEGER NOT NULL CHECK (is_prefix IN (0, 1)),
  PRIMARY KEY (agent_id, revision, pattern),
  FOREIGN KEY (agent_id, revision) REFERENCES declarations (agent_id, revision),
  CHECK (prefix = CASE WHEN is_prefix = 1 THEN substr(pattern, 1, length(pattern) - 1) ELSE pattern END),
  CHECK ((substr(pattern, -1) = '*') = (is_prefix = 1))
);
CREATE INDEX declaration_sources_by_prefix ON declaration_sources (prefix, is_prefix);

CREATE TRIGGER declaration_sources_are_immutable_update BEFORE UPDATE ON declaration_sources
BEGIN
  SELECT RAISE(ABORT, 'declaration sources are immutable');
END;
CREATE TRIGGER declaration_sources_are_immutable_delete BEFORE DELETE ON declaration_sources
BEGIN
  SELECT RAISE(ABORT, 'declaration sources are immutable');
END;

-- Every revision already stored (OR IGNORE: running it again adds only what is missing).
INSERT OR IGNORE INTO declaration_sources (agent_id, revision, pattern, prefix, is_prefix)
SELECT d.agent_id, d.revision, s.value,
  CASE WHEN substr(s.value, -1) = '*' THEN substr(s.value, 1, length(s.value) - 1) ELSE s.value END,
  CASE WHEN substr(s.value, -1) = '*' THEN 1 ELSE 0 END
FROM declarations d, json_each(json_extract(d.registration, '$.agent.sources')) s;
