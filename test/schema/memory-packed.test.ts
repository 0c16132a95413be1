import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import { sha256Hex } from "../../src/core/hash";
import { packPage } from "../../src/core/page-packing";
import { releaseLog, runBackfill } from "../../src/storage/search-backfill";
import {
  getConversationPage,
  listConversationPages,
  readConversationFacts,
  readConversationPageVersions,
  searchConversationPages,
} from "../../src/storage/shard/conversation-memory";
import { readPageHeads } from "../../src/storage/shard/extractions";
import { btreeStats } from "./btree-stats";
import { AGENT, AT, CONVERSATION, extractRound } from "./extraction-rounds";
import { loggedMessages } from "./logged-messages";
import { shardHolding } from "./shard-migrations";
import { backfillOver, d1Over } from "./sqlite-d1";

/**
 * What extracted memory's text costs to keep (migrations/shard/0037): each version of a page is
 * written packed, and every reader gets back the text that was written, checked against its hash.
 * Pages are merged by extraction's own rule (core/fact-merge) from statements in six scripts,
 * written through extraction's writer, measured with SQLite's own page statistics (`dbstat`).
 */

/** A shard holding the conversation, migrated whole; `below`: stored before the migrations from it on. */
const shard = (below?: string): DatabaseSync => shardHolding(new DatabaseSync(":memory:"), CONVERSATION, below);

const utf8 = (text: string): number => new TextEncoder().encode(text).length;

it("keeps each version of an extracted page packed, in under half its text's bytes in any script, and every reader reads back the text written", async () => {
  const PAGES = 36;
  const ROUNDS = 4;
  const db = shard();
  const cited = await loggedMessages(db, CONVERSATION, 50, AT);
  const written: string[][] = [];
  for (let round = 0; round < ROUNDS; round++) written.push(await extractRound(db, PAGES, round, cited));
  const text = written.flat().reduce((sum, page) => sum + utf8(page), 0);
  const { bytes, entries } = btreeStats(db, ["extracted_versions"]);
  expect(entries).toBe(PAGES * ROUNDS);
  // The same pages kept as text, as before 0037 (and until its release on a shard that held conversations).
  const plain = shard("0037");
  const plainCited = await loggedMessages(plain, CONVERSATION, 50, AT);
  for (let round = 0; round < ROUNDS; round++) expect(await extractRound(plain, PAGES, round, plainCited)).toEqual(written[round]);
  const before = btreeStats(plain, ["extracted_versions"]);
  plain.close();
  console.log(`extracted versions: ${bytes} bytes for ${text} bytes of text (${(bytes / text).toFixed(2)}x; as text before 0037: ${before.bytes}, ${(before.bytes / text).toFixed(2)}x)`);
  expect(before.bytes).toBeGreaterThan(text);
  expect(bytes).toBeLessThan(0.5 * text);
  // Every script is packed: no version keeps its text as text.
  expect(db.prepare("SELECT COUNT(*) AS n FROM extracted_versions WHERE packed IS NULL OR content <> ''").get()).toEqual({ n: 0 });

  const d1 = d1Over(db);
  const last = written[ROUNDS - 1] ?? [];
  for (const p of [0, 1, 2, 3, 4, 5]) {
    const path = `extracted/plans/topic-${p}`;
    const head = last[p] ?? "";
    expect(await getConversationPage(d1, CONVERSATION, AGENT, path)).toEqual({ conversationId: CONVERSATION, agentId: AGENT, path, version: ROUNDS, content: head, contentHash: sha256Hex(head), chars: head.length, createdAt: AT });
    expect((await getConversationPage(d1, CONVERSATION, AGENT, path, 2))?.content).toBe(written[1]?.[p]);
    expect((await readPageHeads(d1, CONVERSATION, AGENT, [path])).get(path)).toEqual({ version: ROUNDS, content: head, contentHash: sha256Hex(head) });
  }
  const listed = await listConversationPages(d1, CONVERSATION, AGENT, { limit: 500 });
  expect(listed.map((page) => page.chars)).toEqual(listed.map((page) => last[Number(page.path.split("-").at(-1))]?.length));
  const versions = await readConversationPageVersions(d1, CONVERSATION, AGENT, [{ path: "extracted/plans/topic-1", version: 1 }, { path: "extracted/plans/topic-4", version: 3 }]);
  expect(versions).toEqual(new Map([["1:extracted/plans/topic-1", written[0]?.[1]], ["3:extracted/plans/topic-4", written[2]?.[4]]]));
  // Search finds a page by a word of its text (its terms were computed from the text, not the row) and cuts its snippet from it.
  const hits = await searchConversationPages(d1, CONVERSATION, AGENT, "встреча переносится", 3);
  expect(hits.length).toBeGreaterThan(0);
  expect(hits.every((hit) => hit.content === last[Number(hit.path.split("-").at(-1))] && hit.snippet.includes("встреча"))).toBe(true);
  const facts = await readConversationFacts(d1, CONVERSATION, AGENT, undefined, 4, 1);
  expect(facts.length).toBe(4);
  expect(facts.every((fact) => fact.pageContent === last[Number(fact.path.split("-").at(-1))])).toBe(true);
  db.close();
});

it("writes versions as text until the release on a shard that held conversations before 0037, then packed; both read back", async () => {
  const db = shard("0037");
  expect(db.prepare("SELECT packed FROM page_packing").get()).toEqual({ packed: 0 });
  const cited = await loggedMessages(db, CONVERSATION, 50, AT);
  const before = await extractRound(db, 6, 0, cited);
  // A Worker from before 0037 reads `content` only: until the release, every version keeps its text there.
  expect(db.prepare("SELECT content, packed, packed_chars FROM extracted_versions ORDER BY path").all()).toEqual(before.map((content) => ({ content, packed: null, packed_chars: null })));
  await releaseLog(backfillOver(db));
  expect(db.prepare("SELECT packed FROM page_packing").get()).toEqual({ packed: 1 });
  const after = await extractRound(db, 6, 1, cited);
  expect(db.prepare("SELECT COUNT(*) AS n FROM extracted_versions WHERE version = 2 AND packed IS NOT NULL AND content = ''").get()).toEqual({ n: 6 });
  const d1 = d1Over(db);
  for (const p of [0, 3, 5]) {
    const path = `extracted/plans/topic-${p}`;
    expect((await getConversationPage(d1, CONVERSATION, AGENT, path, 1))?.content).toBe(before[p]);
    expect((await getConversationPage(d1, CONVERSATION, AGENT, path))?.content).toBe(after[p]);
  }
  db.close();
});

it("indexes a packed head the index lacks from its text, and refuses to serve a packed version whose bytes do not unpack to the text its hash names", async () => {
  const db = shard();
  const cited = await loggedMessages(db, CONVERSATION, 50, AT);
  const written = await extractRound(db, 3, 0, cited);
  const d1 = d1Over(db);
  // Heads whose terms the index does not hold (as one written over a page stored before the index): indexed from their text.
  db.prepare("INSERT INTO conversation_memory_terms (conversation_memory_terms) VALUES ('delete-all')").run();
  db.prepare("UPDATE extracted_pages SET terms_version = NULL").run();
  expect(await searchConversationPages(d1, CONVERSATION, AGENT, "打ち合わせ", 3)).toEqual([]);
  expect((await runBackfill(backfillOver(db), "shard")).pages).toBe(3);
  const hits = await searchConversationPages(d1, CONVERSATION, AGENT, "打ち合わせ", 3);
  expect(hits.map((hit) => [hit.path, hit.content])).toEqual([["extracted/plans/topic-2", written[2]]]);

  // A row changed behind the service's back (rows are immutable to it): another page's bytes, then bytes that do not inflate.
  db.exec("DROP TRIGGER extracted_versions_immutable_update");
  db.prepare("UPDATE extracted_versions SET packed = ? WHERE path = 'extracted/plans/topic-0'").run(packPage(written[1] ?? ""));
  await expect(getConversationPage(d1, CONVERSATION, AGENT, "extracted/plans/topic-0")).rejects.toThrow(/does not match its hash/);
  db.prepare("UPDATE extracted_versions SET packed = x'01ffff' WHERE path = 'extracted/plans/topic-1'").run();
  await expect(readPageHeads(d1, CONVERSATION, AGENT, ["extracted/plans/topic-1"])).rejects.toThrow(/does not inflate/);
  expect((await getConversationPage(d1, CONVERSATION, AGENT, "extracted/plans/topic-2"))?.content).toBe(written[2]);
  db.close();
});
