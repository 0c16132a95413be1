-- The revision of the declarations as a whole: one counter, moved by every row written to (or
-- removed from) `declarations` and `declaration_sources`, inside the statement that wrote it.
--
-- A conversation's Durable Object holds the declarations that serve its conversation together with
-- the revision it read them at, and a source append's write only records that source's preflight
-- outcome while the counter still reads the same (the guard is inside the append's own batch). A
-- declaration change therefore takes effect for the very next append of every conversation, without
-- the object reading the declarations again on every append.

CREATE TABLE declaration_revision (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  revision INTEGER NOT NULL
);
INSERT INTO declaration_revision (id, revision) VALUES (1, 0);

CREATE TRIGGER declarations_revise_insert AFTER INSERT ON declarations
BEGIN
  UPDATE declaration_revision SET revision = revision + 1 WHERE id = 1;
END;
CREATE TRIGGER declarations_revise_delete AFTER DELETE ON declarations
BEGIN
  UPDATE declaration_revision SET revision = revision + 1 WHERE id = 1;
END;
CREATE TRIGGER declaration_sources_revise_insert AFTER INSERT ON declaration_sources
BEGIN
  UPDATE declaration_revision SET revision = revision + 1 WHERE id = 1;
END;
