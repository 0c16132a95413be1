-- Extracted pages indexed by their facts' words only.
--
-- A page's terms in `conversation_memory_terms` (0023) were its whole text's: with the heading every
-- page repeats ("Extracted memory <path>: facts taken from conversation history, newest value
-- first"), "previously:" before each superseded statement, and each line's source tag (message id,
-- seq, a 12-digit hash prefix: words no question says, and a new term for every source). Now a
-- page is indexed by its facts' keys and statements alone (src/core/fact-merge.ts,
-- `pageTermsText`); its path is indexed on its own as before.
--
-- The index is contentless: a head's terms are deleted by computing them again from the text it
-- held, so each head says which rule its terms were written by (`terms_rule`: 1 the whole text, 2
-- the facts' words), and a writer deletes by that rule and writes by the shard's. A Worker from
-- before this migration computes terms by the whole text only, so while one may still be running
-- the shard's rule stays 1: `page_terms_mode.rule` is 1, and `npm run migrate -- --remote
-- --release` (the last step of `npm run deploy`, after the upload) sets it to 2; `npm run migrate`
-- on a local database at once. A database that holds no conversation yet starts at 2. Heads
-- indexed before keep their terms until their page is written again.

ALTER TABLE extracted_pages ADD COLUMN terms_rule INTEGER NOT NULL DEFAULT 1 CHECK (terms_rule IN (1, 2));

CREATE TABLE page_terms_mode (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  rule INTEGER NOT NULL CHECK (rule IN (1, 2))
);
INSERT INTO page_terms_mode (id, rule) SELECT 1, CASE WHEN EXISTS (SELECT 1 FROM conversations) THEN 1 ELSE 2 END;
