import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import { sha256Hex } from "../../src/core/hash";
import { runBackfill } from "../../src/storage/search-backfill";
import { getConversationPage, listConversationPages, readConversationFactSources, readConversationPageVersions } from "../../src/storage/shard/conversation-memory";
import type { MergedPage } from "../../src/storage/shard/extractions";
import { readPageHeads, writeMergedVersions } from "../../src/storage/shard/extractions";
import { EXTRACTED_PAGES_MOVE, EXTRACTED_VERSIONS_MOVE } from "../../src/storage/shard/table-moves";
import { btreeStats } from "./btree-stats";
import { loggedMessages } from "./logged-messages";
import { migrateShard, withTodaysLogWriter } from "./shard-migrations";
import { backfillOver, d1Over } from "./sqlite-d1";

/**
 * What extracted memory's versions cost to keep (migrations/shard/0035): each version of a page is
 * one entry, keyed by the conversation's and the agent's integer keys, its hash as 32 bytes and its
 * time as milliseconds, and the versions and heads stored before it move to the new tables a batch
 * at a time while a Worker not yet redeployed keeps reading and writing them under the old names.
 * Measured with SQLite's own page statistics (`dbstat`), written through the extraction's writer
 * and, for the Worker before the migration, through the statement it ran.
 */

const CONVERSATION = "telegram:7123456789:-1001987654321";
const AGENT = "support-bot.compactor";
const AT = "2026-12-05T10:00:00.123Z";

function shard(below?: string): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  migrateShard(db, "", below);
  // Today's log writer logs the messages sources cite, at every stage.
  withTodaysLogWriter(db);
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, '2026-12-05T00:00:00.000Z')").run(CONVERSATION);
  return db;
}

/** A page's content as extraction writes it: a heading and a fact a line, each with its source. */
const content = (page: number, round: number): string =>
  [
    `Extracted memory extracted/people/member-${page}: facts taken from conversation history, newest value first.`,
    ...[0, 1, 2].map((f) => `- fact-${f}: @member${page} said the offsite budget is ${1_000 * (round + f)} euros (msg ${round}-${f}, seq ${100 * round + f}, ref ${sha256Hex(`${page}/${round}/${f}`).slice(0, 12)})`),
  ].join("\n");

/** The statement a Worker before 0035 wrote versions with (storage/shard/extractions at 0034). */
const OLD_WRITE = `INSERT INTO conversation_memory_versions (conversation_id, agent_id, path, version, content, content_hash, chars, deleted, created_at)
  SELECT ?1, ?2, json_extract(j.value, '$.path'), json_extract(j.value, '$.version'), json_extract(j.value, '$.content'), json_extract(j.value, '$.hash'), json_extract(j.value, '$.chars'), 0, ?4
  FROM json_each(?3) j
  WHERE COALESCE((SELECT version FROM conversation_memory_pages WHERE conversation_id = ?1 AND agent_id = ?2 AND path = json_extract(j.value, '$.path')), 0) = json_extract(j.value, '$.version') - 1
  RETURNING path`;

function oldWrite(db: DatabaseSync, pages: readonly { path: string; version: number; content: string }[], at = AT): string[] {
  const rows = JSON.stringify(pages.map((p) => ({ ...p, hash: sha256Hex(p.content), chars: p.content.length })));
  return (db.prepare(OLD_WRITE).all(CONVERSATION, AGENT, rows, at) as { path: string }[]).map((r) => r.path);
}

/** `pages` pages written `rounds` times by the Worker before 0035, on a shard as it stood before it. */
function before0035(pages: number, rounds: number): DatabaseSync {
  const db = shard("0035");
  db.prepare("INSERT INTO agent_keys (agent_id) VALUES (?)").run(AGENT);
  db.exec("BEGIN");
  for (let round = 0; round < rounds; round++) {
    const written = oldWrite(db, [...Array(pages).keys()].map((p) => ({ path: `extracted/people/member-${p}`, version: round + 1, content: content(p, round) })));
    expect(written).toHaveLength(pages);
  }
  db.exec("COMMIT");
  return db;
}

const count = (db: DatabaseSync, table: string): number => Number((db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n);
const oldVersions = (db: DatabaseSync): unknown[] => db.prepare("SELECT * FROM conversation_memory_versions ORDER BY path, version").all();
const oldHeads = (db: DatabaseSync): unknown[] => db.prepare("SELECT * FROM conversation_memory_pages ORDER BY id").all();

it("keeps a version of an extracted page in one entry, at most 200 bytes beside its content (352 before), and reads it back as written", async () => {
  const PAGES = 40;
  const ROUNDS = 5;
  const now = new Date(AT);
  const db = shard();
  const d1 = d1Over(db);
  let text = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const heads = await readPageHeads(d1, CONVERSATION, AGENT, [...Array(PAGES).keys()].map((p) => `extracted/people/member-${p}`));
    const pages: MergedPage[] = [...Array(PAGES).keys()].map((p) => ({ path: `extracted/people/member-${p}`, head: heads.get(`extracted/people/member-${p}`), content: content(p, round), provenance: [] }));
    text += pages.reduce((sum, page) => sum + page.content.length, 0);
    expect((await writeMergedVersions(d1, CONVERSATION, AGENT, pages, now)).size).toBe(PAGES);
  }
  const { bytes, entries } = btreeStats(db, ["extracted_versions"]);
  expect(entries).toBe(PAGES * ROUNDS);
  const beside = (bytes - text) / entries;
  // The same versions in the schema before 0035 (its rowid table and primary-key index, text ids, hex hash, text time).
  const old = before0035(PAGES, ROUNDS);
  const before = btreeStats(old, ["conversation_memory_versions"]);
  console.log(`an extracted version: ${beside.toFixed(1)} bytes beside its content (before 0035: ${((before.bytes - text) / (PAGES * ROUNDS)).toFixed(1)}, in ${before.entries} entries)`);
  expect(before.entries).toBe(2 * PAGES * ROUNDS);
  expect(beside).toBeLessThanOrEqual(200);
  expect(before.bytes - text).toBeGreaterThan(1.5 * (bytes - text));

  // Read back as written: the head, an older version, the list, and versions by number.
  const page = await getConversationPage(d1, CONVERSATION, AGENT, "extracted/people/member-7");
  expect(page).toEqual({ conversationId: CONVERSATION, agentId: AGENT, path: "extracted/people/member-7", version: ROUNDS, content: content(7, ROUNDS - 1), contentHash: sha256Hex(content(7, ROUNDS - 1)), chars: content(7, ROUNDS - 1).length, createdAt: AT });
  expect(await getConversationPage(d1, CONVERSATION, AGENT, "extracted/people/member-7", 2)).toMatchObject({ version: 2, content: content(7, 1), contentHash: sha256Hex(content(7, 1)) });
  expect(await getConversationPage(d1, CONVERSATION, AGENT, "extracted/people/member-7", ROUNDS + 1)).toBeUndefined();
  expect(await getConversationPage(d1, "telegram:1:2", AGENT, "extracted/people/member-7")).toBeUndefined();
  const listed = await listConversationPages(d1, CONVERSATION, AGENT, { limit: 3 });
  expect(listed.map((p) => [p.conversationId, p.path, p.version, p.contentHash])).toEqual(
    [0, 1, 10].map((p) => [CONVERSATION, `extracted/people/member-${p}`, ROUNDS, sha256Hex(content(p, ROUNDS - 1))]),
  );
  const versions = await readConversationPageVersions(d1, CONVERSATION, AGENT, [{ path: "extracted/people/member-3", version: 1 }, { path: "extracted/people/member-3", version: 4 }]);
  expect(versions).toEqual(new Map([["1:extracted/people/member-3", content(3, 0)], ["4:extracted/people/member-3", content(3, 3)]]));
  db.close();
  old.close();
});

it("moves the heads and versions stored before 0035 a batch at a time, losing none, while a Worker not yet redeployed reads and writes them under the old names", async () => {
  // 1,200 pages of three versions: 3,600 versions, more than three batches of the versions' move.
  const db = before0035(1_200, 3);
  expect(3_600).toBeGreaterThan(3 * EXTRACTED_VERSIONS_MOVE.perBatch);
  db.prepare("UPDATE conversation_memory_pages SET terms_version = version WHERE id % 2 = 0").run();
  const versionsBefore = oldVersions(db);
  const headsBefore = oldHeads(db);
  migrateShard(db, "0035");

  // A Worker not yet redeployed reads every version and head under the old names, as before.
  expect(oldVersions(db)).toEqual(versionsBefore);
  expect(oldHeads(db)).toEqual(headsBefore);
  // A row stored before the migration and not yet moved cannot be deleted, nor a row be added to the old tables.
  expect(() => db.prepare("DELETE FROM conversation_memory_versions_v1 WHERE rowid = 1").run()).toThrow(/holds it exactly/);
  expect(() => db.prepare("DELETE FROM conversation_memory_pages_v1 WHERE id = 1").run()).toThrow(/holds it/);
  expect(() =>
    db.prepare("INSERT INTO conversation_memory_versions_v1 (conversation_id, agent_id, path, version, content, content_hash, chars, deleted, created_at) VALUES (?, ?, 'extracted/x', 9, '', ?, 0, 1, ?)").run(CONVERSATION, AGENT, sha256Hex(""), AT),
  ).toThrow(/go to extracted_versions/);

  // It writes as it did: a page whose head is still in the old table, and a new page. Both land in the new tables.
  const later = "2026-12-05T11:00:00.456Z";
  expect(oldWrite(db, [{ path: "extracted/people/member-3", version: 4, content: "member 3, round 4" }, { path: "extracted/topics/new", version: 1, content: "a new page" }], later)).toEqual([
    "extracted/people/member-3",
    "extracted/topics/new",
  ]);
  // A version that is not the next of its page is refused, whichever table holds the page's versions.
  expect(oldWrite(db, [{ path: "extracted/people/member-3", version: 4, content: "again" }])).toEqual([]);
  expect(() => db.prepare("INSERT INTO conversation_memory_versions (conversation_id, agent_id, path, version, content, content_hash, chars, deleted, created_at) VALUES (?, ?, 'extracted/people/member-5', 3, 'x', ?, 1, 0, ?)").run(CONVERSATION, AGENT, sha256Hex("x"), AT)).toThrow(/next number/);
  expect(count(db, "extracted_versions")).toBe(2);
  const heads = db.prepare("SELECT id, path, version, terms_version FROM conversation_memory_pages WHERE path IN ('extracted/people/member-3', 'extracted/topics/new') ORDER BY id").all();
  // The moved-over head keeps its id (the rowid of its terms) and its terms' version; the new page's id follows every old one.
  const old3 = headsBefore.find((h) => (h as { path: string }).path === "extracted/people/member-3") as { id: number; terms_version: number | null };
  expect(heads).toEqual([
    { id: old3.id, path: "extracted/people/member-3", version: 4, terms_version: old3.terms_version },
    { id: 1_201, path: "extracted/topics/new", version: 1, terms_version: null },
  ]);
  expect(count(db, "conversation_memory_pages_v1")).toBe(1_199);
  // ... and moves a head's terms' version under the old name, wherever the head is.
  db.prepare("UPDATE conversation_memory_pages AS p SET terms_version = json_extract(j.value, '$.version') FROM json_each(?1) j WHERE p.conversation_id = ?2 AND p.path = json_extract(j.value, '$.path')").run(
    JSON.stringify([{ path: "extracted/topics/new", version: 1 }, { path: "extracted/people/member-9", version: 3 }]),
    CONVERSATION,
  );
  expect(db.prepare("SELECT path, terms_version FROM conversation_memory_pages WHERE path IN ('extracted/topics/new', 'extracted/people/member-9') ORDER BY path").all()).toEqual([
    { path: "extracted/people/member-9", terms_version: 3 },
    { path: "extracted/topics/new", terms_version: 1 },
  ]);

  // One batch of each move: what the old names read does not change.
  const versionsMid = oldVersions(db);
  const headsMid = oldHeads(db);
  for (const move of [EXTRACTED_PAGES_MOVE, EXTRACTED_VERSIONS_MOVE]) {
    const [first] = await backfillOver(db).rows<{ id: number }>(move.oldest);
    await backfillOver(db).write(move.batch(first?.id ?? 0, 500));
  }
  expect(count(db, "conversation_memory_versions_v1")).toBe(3_600 - 500);
  expect(oldVersions(db)).toEqual(versionsMid);
  expect(oldHeads(db)).toEqual(headsMid);

  // The rest, a batch per transaction: the old tables are left empty, and every version and head is in the new ones.
  const batches: number[] = [];
  const done = await runBackfill(backfillOver(db), "shard", (progress) => {
    if (progress.extractedVersionsThroughId !== (batches.at(-1) ?? 0)) batches.push(progress.extractedVersionsThroughId);
  });
  expect(batches).toEqual([1_500, 2_500, 3_500, 4_500]);
  expect(done.extractedPagesThroughId).toBeGreaterThan(0);
  expect(count(db, "conversation_memory_versions_v1")).toBe(0);
  expect(count(db, "conversation_memory_pages_v1")).toBe(0);
  expect(count(db, "extracted_versions")).toBe(3_602);
  // Every head as it was, those with no terms now indexed at their version (the backfill's last step).
  const withTerms = (heads: unknown[]) => (heads as { version: number; terms_version: number | null }[]).map((h) => ({ ...h, terms_version: h.terms_version ?? h.version }));
  expect(oldHeads(db)).toEqual(withTerms(headsMid));
  // The old names read the moved versions as they were stored, but the time, which is now kept to the millisecond.
  const moved = oldVersions(db) as { created_at: string }[];
  expect(moved.map((v) => ({ ...v, created_at: new Date(v.created_at).toISOString() }))).toEqual(versionsMid);

  // The Worker of this migration reads them from the new tables.
  const d1 = d1Over(db);
  expect(await getConversationPage(d1, CONVERSATION, AGENT, "extracted/people/member-1100", 2)).toMatchObject({ version: 2, content: content(1_100, 1), contentHash: sha256Hex(content(1_100, 1)), createdAt: AT });
  expect(await getConversationPage(d1, CONVERSATION, AGENT, "extracted/people/member-3")).toMatchObject({ version: 4, content: "member 3, round 4", createdAt: later });
  const heads3 = await readPageHeads(d1, CONVERSATION, AGENT, ["extracted/people/member-3", "extracted/topics/new", "extracted/people/member-0"]);
  expect([...heads3.entries()].map(([path, h]) => [path, h.version, h.contentHash]).sort()).toEqual([
    ["extracted/people/member-0", 3, sha256Hex(content(0, 2))],
    ["extracted/people/member-3", 4, sha256Hex("member 3, round 4")],
    ["extracted/topics/new", 1, sha256Hex("a new page")],
  ]);

  // Run again: nothing left to move.
  const again = await runBackfill(backfillOver(db), "shard");
  expect([again.extractedPagesThroughId, again.extractedVersionsThroughId]).toEqual([0, 0]);
  db.close();
});

/** The statement a Worker before 0036 wrote sources with (storage/shard/extractions at 0035). */
const OLD_SOURCES = `INSERT OR IGNORE INTO conversation_memory_sources (conversation_key, agent_key, path, version, fact_key, message_id, seq, event_hash, run_id)
  SELECT (SELECT id FROM conversation_keys WHERE conversation_id = ?1), (SELECT id FROM agent_keys WHERE agent_id = ?2), json_extract(s.value, '$.path'), json_extract(s.value, '$.version'),
         json_extract(s.value, '$.factKey'), json_extract(s.value, '$.messageId'), json_extract(s.value, '$.seq'), json_extract(s.value, '$.eventHash'), json_extract(s.value, '$.runId')
  FROM json_each(?3) s`;

const oldSources = (db: DatabaseSync): unknown[] => db.prepare("SELECT * FROM conversation_memory_sources ORDER BY path, fact_key, version, seq").all();

it("keeps a fact's source by its page's id with the cited event's hash in the log only, moves those stored before 0036 a batch at a time, and refuses a source citing a hash the log does not hold", async () => {
  // 100 pages, two versions each, 60 sources a version: 12,000 sources, more than one batch of the move.
  const db = shard("0036");
  const cited = await loggedMessages(db, CONVERSATION, 20, AT);
  const d1 = d1Over(db);
  const sourcesOf = (p: number, v: number) =>
    [...Array(60).keys()].map((i) => ({ factKey: `fact-${i % 15}`, messageId: cited[(i + p) % 20]?.seq.toString() ?? "", seq: cited[(i + p) % 20]?.seq ?? 0, eventHash: cited[(i + p) % 20]?.hash ?? "", runId: `ext_${p}_${v}` }));
  db.prepare("INSERT INTO agent_keys (agent_id) VALUES (?)").run(AGENT);
  for (let v = 1; v <= 2; v++) {
    // The versions, as the Worker before 0036 wrote them (through 0035's views).
    expect(oldWrite(db, [...Array(100).keys()].map((p) => ({ path: `extracted/topics/t${p}`, version: v, content: content(p, v) })))).toHaveLength(100);
    db.exec("BEGIN");
    for (let p = 0; p < 100; p++) db.prepare(OLD_SOURCES).run(CONVERSATION, AGENT, JSON.stringify(sourcesOf(p, v).map((s) => ({ ...s, path: `extracted/topics/t${p}`, version: v }))));
    db.exec("COMMIT");
  }
  const sourcesBefore = oldSources(db);
  expect(sourcesBefore).toHaveLength(12_000);
  const before = btreeStats(db, ["conversation_memory_sources"]);
  migrateShard(db, "0036");

  // A Worker not yet redeployed reads every source under the old name, as before; an old row not yet moved cannot be deleted.
  expect(oldSources(db)).toEqual(sourcesBefore);
  expect(() => db.prepare("DELETE FROM conversation_memory_sources_v1 WHERE path = 'extracted/topics/t0'").run()).toThrow(/holds it/);
  // It writes as it did: a source citing the log's hash lands in the new table; one citing any other is refused.
  const late = { path: "extracted/topics/t0", version: 2, factKey: "late", messageId: "late", seq: cited[3]?.seq, eventHash: cited[3]?.hash, runId: "ext_late" };
  db.prepare(OLD_SOURCES).run(CONVERSATION, AGENT, JSON.stringify([late]));
  expect(() => db.prepare(OLD_SOURCES).run(CONVERSATION, AGENT, JSON.stringify([{ ...late, factKey: "forged", eventHash: cited[4]?.hash }]))).toThrow(/must cite an event of its conversation with its hash/);
  expect(db.prepare("SELECT COUNT(*) AS n FROM extracted_sources").get()).toEqual({ n: 1 });

  // The move, a batch at a time: the old table is left empty, and the new one reads what the old name read.
  const done = await runBackfill(backfillOver(db), "shard");
  expect(done.extractedSourcesBatches).toBe(2);
  expect(db.prepare("SELECT COUNT(*) AS n FROM conversation_memory_sources_v1").get()).toEqual({ n: 0 });
  type Row = { path: string; fact_key: string; version: number; seq: number };
  const inKeyOrder = (a: Row, b: Row) => (a.path !== b.path ? (a.path < b.path ? -1 : 1) : a.fact_key !== b.fact_key ? (a.fact_key < b.fact_key ? -1 : 1) : a.version - b.version || a.seq - b.seq);
  const lateRow = { conversation_key: 1, agent_key: 1, path: late.path, fact_key: "late", version: 2, seq: late.seq, message_id: "late", event_hash: late.eventHash, run_id: "ext_late" };
  expect(oldSources(db)).toEqual(([...sourcesBefore, lateRow] as Row[]).sort(inKeyOrder));
  const after = btreeStats(db, ["extracted_sources"]);
  console.log(`a source of a fact: ${(after.bytes / 12_001).toFixed(1)} bytes (before 0036: ${(before.bytes / 12_000).toFixed(1)})`);
  expect(after.entries).toBe(12_001);
  expect(after.bytes).toBeLessThan(before.bytes / 2);
  const read = await readConversationFactSources(d1, CONVERSATION, AGENT, "extracted/topics/t7", 2);
  expect(read.map((s) => [s.factKey, s.seq, s.eventHash, s.runId])).toEqual(
    sourcesOf(7, 2)
      .map((s) => [s.factKey, s.seq, s.eventHash, s.runId])
      .sort((a, b) => (a[0] === b[0] ? Number(a[1]) - Number(b[1]) : String(a[0]) < String(b[0]) ? -1 : 1)),
  );

  // The writer of this migration refuses a source citing a hash the log does not hold: its whole batch, version and all.
  const heads = await readPageHeads(d1, CONVERSATION, AGENT, ["extracted/topics/t9"]);
  const forged = { path: "extracted/topics/t9", head: heads.get("extracted/topics/t9"), content: "forged", provenance: [{ factKey: "x", messageId: "1", seq: cited[0]?.seq ?? 0, eventHash: cited[1]?.hash ?? "", runId: "ext_forged" }] };
  await expect(writeMergedVersions(d1, CONVERSATION, AGENT, [forged], new Date(AT))).rejects.toThrow(/NOT NULL constraint failed: extracted_sources.seq/);
  expect((await readPageHeads(d1, CONVERSATION, AGENT, ["extracted/topics/t9"])).get("extracted/topics/t9")?.version).toBe(2);
  db.close();
});
