-- The shard's copy of the declarations' revision (migrations/control/0014). Declarations live in
-- the control database; a source append's batch runs on the conversation's shard, so its guard
-- ("record this preflight only while the declarations are the ones the object holds") compares
-- against this copy. Every declaration write raises the copy on every shard to the control
-- database's revision before it answers (publishRevision, src/storage/compaction-store-declarations.ts),
-- and a conversation's object whose append finds the copy behind the revision it confirmed with the
-- control database raises it, so the copy is never ahead of the truth and lags only while a
-- registration is still answering.
CREATE TABLE declaration_revision (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  revision INTEGER NOT NULL
);
INSERT INTO declaration_revision (id, revision) VALUES (1, 0);
