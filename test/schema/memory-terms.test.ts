import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import { releaseLog, runBackfill } from "../../src/storage/search-backfill";
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
