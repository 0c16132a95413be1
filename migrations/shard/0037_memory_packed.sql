-- Extracted memory's text, packed.
--
-- A version of an extracted page keeps the page whole (0035), and a page repeats its format on
-- every line: its heading (the path, and "facts taken from conversation history, newest value
-- first"), a prefix a line and a source tag a fact ("(msg …, seq …, ref …)"). At the bench's group
-- chat the versions' text was 1.9 times the text said in the conversation, and most of the bytes
-- of `extracted_versions`.
--
-- A version is now written packed (src/core/page-packing.ts: a format byte, then raw DEFLATE over a
-- dictionary of the page format's own words): `packed` holds the bytes and `packed_chars` the
-- text's length in UTF-16 code units, the unit every budget counts. A packed row keeps `content`
-- empty and `chars` 0, which is what 0035's CHECKs (which an ALTER cannot change) say of an empty
-- text; `deleted` stays 0, so a packed row is never taken for a tombstone. Nothing in SQL reads a
-- page's text: a reader unpacks it and checks it against `content_hash`, which still covers the
-- text, never how a row keeps it (src/storage/shard/extracted-keys.ts, `versionText`). Rows stored
-- before keep their text as it is, and read as they did.
--
-- A Worker from before this migration reads `content` only, so while one may still be running the
-- versions are written as text: `page_packing.packed` is 0, and `npm run migrate -- --remote
-- --release` (the last step of `npm run deploy`, after the upload) sets it to 1; `npm run migrate`
-- on a local database at once. A database that holds no conversation yet starts at 1. The views
-- 0035 left under the old names, for a Worker from before it, show a packed version's text as
-- empty: no such Worker runs once this one is released.

ALTER TABLE extracted_versions ADD COLUMN packed BLOB;

ALTER TABLE extracted_versions ADD COLUMN packed_chars INTEGER CHECK (
  (packed IS NULL AND packed_chars IS NULL)
  OR (typeof(packed) = 'blob' AND length(packed) >= 2 AND packed_chars >= 0 AND content = '' AND chars = 0 AND deleted = 0)
);

CREATE TABLE page_packing (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  packed INTEGER NOT NULL CHECK (packed IN (0, 1))
);
INSERT INTO page_packing (id, packed) SELECT 1, NOT EXISTS (SELECT 1 FROM conversations);
