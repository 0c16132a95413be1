import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import type { PageRow } from "../../src/storage/search-backfill";
import { PAGES_PER_BATCH, releaseLog, runBackfill, wholeTermsAfter, wholeTermsStep } from "../../src/storage/search-backfill";
import { searchConversationPages } from "../../src/storage/shard/conversation-memory";
import { btreeStats } from "./btree-stats";
import { AGENT, AT, CONVERSATION, extractRound } from "./extraction-rounds";
import { loggedMessages } from "./logged-messages";
import { shardHolding } from "./shard-migrations";
import { backfillOver, d1Over } from "./sqlite-d1";

/**
 * What extracted memory's word index costs (migrations/shard/0039): a page is indexed by its facts'
 * keys and statements, not by the heading every page repeats, "previously:", or each line's source
 * tag (a message id, a seq and a hash prefix: a new term for every source). The index is
 * contentless, so a head's terms are deleted by the rule they were written by. Measured with
 * SQLite's own page statistics (`dbstat`) over the index's tables.
 */

const INDEX = ["conversation_memory_terms_data", "conversation_memory_terms_idx", "conversation_memory_terms_docsize", "conversation_memory_terms_config"];

const shard = (below?: string): DatabaseSync => shardHolding(new DatabaseSync(":memory:"), CONVERSATION, below);

/** How many of the index's entries hold `term` (its vocabulary, by instance). */
const instances = (db: DatabaseSync, term: string): number => Number((db.prepare("SELECT COUNT(*) AS n FROM conversation_memory_terms_vocab WHERE term = ?").get(term) as { n: number }).n);

/** Words of the format that no fact says: the heading's, "previously", a tag's "msg" and "ref", a tag's message id. */
const FORMAT_WORDS = ["newest", "histori", "previous", "msg", "ref", "7003"];

const found = async (db: DatabaseSync, query: string): Promise<string[]> => (await searchConversationPages(d1Over(db), CONVERSATION, AGENT, query, 50)).map((hit) => hit.path).sort();

it("indexes an extracted page by its facts' words, in at most 80% of the index its whole text took, and finds it by them", async () => {
  const PAGES = 36;
  const ROUNDS = 4;
  const sized = async (db: DatabaseSync) => {
    const cited = await loggedMessages(db, CONVERSATION, 50, AT);
    for (let round = 0; round < ROUNDS; round++) await extractRound(db, PAGES, round, cited);
    db.prepare("INSERT INTO conversation_memory_terms (conversation_memory_terms) VALUES ('optimize')").run();
    return btreeStats(db, INDEX).bytes;
  };
  // The same pages, indexed by their whole text (as before 0039, and until its release on a shard that held conversations).
  const whole = shard("0039");
  const before = await sized(whole);
  const facts = shard();
  const after = await sized(facts);
  console.log(`extracted pages' index: ${after} bytes (by their whole text: ${before})`);
  expect(after).toBeLessThanOrEqual(0.8 * before);
  for (const word of FORMAT_WORDS) {
    expect(instances(whole, word), word).toBeGreaterThan(0);
    expect(instances(facts, word), word).toBe(0);
  }
  // A fact's words find its pages either way, in any script.
  for (const query of ["offsite budget euros", "встреча переносится", "打ち合わせ"]) {
    expect(await found(facts, query)).toEqual(await found(whole, query));
    expect((await found(facts, query)).length).toBeGreaterThan(0);
  }
  whole.close();
  facts.close();
});

it("deletes a head's terms by the rule they were written by: pages indexed by their whole text before the release, then written again", async () => {
  const db = shard("0039");
  expect(db.prepare("SELECT rule FROM page_terms_mode").get()).toEqual({ rule: 1 });
  const cited = await loggedMessages(db, CONVERSATION, 50, AT);
  await extractRound(db, 12, 0, cited);
  expect(db.prepare("SELECT DISTINCT terms_rule FROM extracted_pages").all()).toEqual([{ terms_rule: 1 }]);
  expect(instances(db, "newest")).toBe(12);

  await releaseLog(backfillOver(db));
  expect(db.prepare("SELECT rule FROM page_terms_mode").get()).toEqual({ rule: 2 });
  await extractRound(db, 12, 1, cited);
  // Every head's terms now by its facts: the whole text's terms are gone with the versions they indexed.
  expect(db.prepare("SELECT DISTINCT terms_rule FROM extracted_pages").all()).toEqual([{ terms_rule: 2 }]);
  for (const word of FORMAT_WORDS) expect(instances(db, word), word).toBe(0);
  // A statement of round 0 that round 1 moved under "previously" is still found by its words.
  expect(await found(db, "1002")).toEqual(["extracted/plans/topic-0", "extracted/plans/topic-6"]);
  db.prepare("INSERT INTO conversation_memory_terms (conversation_memory_terms, rank) VALUES ('integrity-check', 0)").run();

  // A head whose terms the index does not hold is indexed by the rule now.
  db.prepare("INSERT INTO conversation_memory_terms (conversation_memory_terms) VALUES ('delete-all')").run();
  db.prepare("UPDATE extracted_pages SET terms_version = NULL, terms_rule = 1").run();
  expect((await runBackfill(backfillOver(db), "shard")).pages).toBe(12);
  expect(db.prepare("SELECT DISTINCT terms_rule FROM extracted_pages").all()).toEqual([{ terms_rule: 2 }]);
  for (const word of FORMAT_WORDS) expect(instances(db, word), word).toBe(0);
  expect((await found(db, "встреча переносится")).length).toBeGreaterThan(0);
  db.close();
});

it("re-indexes at the release, a batch at a time, every head still indexed by its whole text: found as before, the index intact, nothing left after", async () => {
  const PAGES = PAGES_PER_BATCH + 20;
  const db = shard("0039");
  const cited = await loggedMessages(db, CONVERSATION, 50, AT);
  // Two rounds before the release (the second replaces the first's terms, both by the whole text).
  await extractRound(db, PAGES, 0, cited);
  await extractRound(db, PAGES, 1, cited);
  expect(db.prepare("SELECT DISTINCT terms_rule FROM extracted_pages").all()).toEqual([{ terms_rule: 1 }]);
  expect(instances(db, "newest")).toBe(PAGES);
  const queries = ["offsite budget euros", "встреча переносится", "打ち合わせ", "1101", "الفندق"];
  const before = await Promise.all(queries.map((query) => found(db, query)));
  for (const hits of before) expect(hits.length).toBeGreaterThan(0);

  await releaseLog(backfillOver(db));
  expect(db.prepare("SELECT DISTINCT terms_rule FROM extracted_pages").all()).toEqual([{ terms_rule: 2 }]);
  for (const word of FORMAT_WORDS) expect(instances(db, word), word).toBe(0);
  db.prepare("INSERT INTO conversation_memory_terms (conversation_memory_terms, rank) VALUES ('integrity-check', 0)").run();
  expect(await Promise.all(queries.map((query) => found(db, query)))).toEqual(before);
  // Each head's rows once: as many documents as live heads.
  expect(db.prepare("SELECT COUNT(*) AS n FROM conversation_memory_terms_docsize").get()).toEqual({ n: PAGES });
  // Nothing left: the step finds no head, and a run again writes nothing.
  expect(db.prepare(wholeTermsAfter(0).sql).all(...wholeTermsAfter(0).params)).toEqual([]);
  const index = btreeStats(db, INDEX);
  await releaseLog(backfillOver(db));
  expect(btreeStats(db, INDEX)).toEqual(index);
  db.close();
});

it("leaves a head its writer moved between the re-index's read and its write as the writer left it", async () => {
  const db = shard("0039");
  const cited = await loggedMessages(db, CONVERSATION, 50, AT);
  await extractRound(db, 12, 0, cited);
  // The release's rule, without its re-index: the heads still hold their whole text's terms.
  db.prepare("UPDATE page_terms_mode SET rule = 2").run();
  const read = db.prepare(wholeTermsAfter(0).sql).all(...wholeTermsAfter(0).params) as unknown as PageRow[];
  expect(read.length).toBe(12);
  // The writer, live: pages 0 to 5 written again (their whole-text terms deleted, their facts' written).
  await extractRound(db, 6, 1, cited);
  for (const statement of wholeTermsStep(read)) db.prepare(statement.sql).run(...statement.params);
  expect(db.prepare("SELECT version, terms_version, terms_rule, COUNT(*) AS n FROM extracted_pages GROUP BY 1, 2, 3 ORDER BY 1").all()).toEqual([
    { version: 1, terms_version: 1, terms_rule: 2, n: 6 },
    { version: 2, terms_version: 2, terms_rule: 2, n: 6 },
  ]);
  db.prepare("INSERT INTO conversation_memory_terms (conversation_memory_terms, rank) VALUES ('integrity-check', 0)").run();
  for (const word of FORMAT_WORDS) expect(instances(db, word), word).toBe(0);
  expect(db.prepare("SELECT COUNT(*) AS n FROM conversation_memory_terms_docsize").get()).toEqual({ n: 12 });
  db.close();
});
