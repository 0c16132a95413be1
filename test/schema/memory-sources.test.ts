import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { canonicalJson } from "../../src/core/hash";
import { insertEvents } from "../../src/storage/shard/log-writer";
import type { MergedPage, ProvenanceRow } from "../../src/storage/shard/extractions";
import { writeMergedVersions } from "../../src/storage/shard/extractions";
import { readConversationFactSources, readConversationFacts } from "../../src/storage/shard/conversation-memory";
import { runBackfill } from "../../src/storage/search-backfill";
import { SOURCES_MOVE } from "../../src/storage/shard/table-moves";
import { btreeStats } from "./btree-stats";
import { backfillOver, d1Over } from "./sqlite-d1";

/**
 * What the provenance of extracted memory costs to keep: each source of a fact a page version sets
 * (the message, its sequence and hash, the extraction run) is one entry written, in one b-tree,
 * keyed by small integers for the conversation and the agent rather than their text ids. Measured
 * in the migrated schema with SQLite's own page statistics (`dbstat`), seeded through the
 * extraction's own writer, with sources shaped as extraction writes them.
 */

const SHARD = fileURLToPath(new URL("../../migrations/shard/", import.meta.url));
const CONVERSATION = "telegram:7123456789:-1001987654321";
const AGENT = "support-bot.compactor";

/**
 * The messages sources cite: `CITED` sources in the log, message `4000 + seq` at each sequence; a
 * source numbered n cites the one at `seqOf(n)` (127: no page's fact cites one message twice).
 */
const CITED = 127;
const seqOf = (n: number): number => 1 + ((n - 1) % CITED);
const message = (seq: number) =>
  eventInputSchema.parse({ kind: "source", idempotencyKey: `tg:update:${seq}`, body: { messageId: String(4_000 + seq), author: { id: "100000001", name: "Member 1" }, text: `message ${seq}` } });
/** A cited event's hash: the log's, for the events `logged` appends. */
const hashOf = (seq: number): string => eventHash(CONVERSATION, message(seq));

async function logged(db: DatabaseSync): Promise<void> {
  const planned = [...Array(CITED).keys()].map((i) => ({ input: message(i + 1), hash: hashOf(i + 1), seq: i + 1 }));
  expect((await insertEvents(d1Over(db), CONVERSATION, planned, "2026-12-05T00:00:00.000Z")).applied.every(Boolean)).toBe(true);
}

async function migrated(): Promise<DatabaseSync> {
  const db = new DatabaseSync(":memory:");
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql")).sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
  await logged(db);
  return db;
}

const source = (factKey: string, n: number): ProvenanceRow => ({ factKey, messageId: String(4_000 + seqOf(n)), seq: seqOf(n), eventHash: hashOf(seqOf(n)), runId: `ext_5b1e6c0e-8a53-4c6e-9d7a-${String(n).padStart(12, "0")}` });
const hex = (n: number): string => n.toString(16).padStart(8, "0").repeat(8);

/** Twenty pages, each written five times, each version setting four facts from three messages each. */
async function extract(db: DatabaseSync): Promise<number> {
  const d1 = d1Over(db);
  let sources = 0;
  const heads = new Map<string, { version: number; content: string; contentHash: string }>();
  for (let round = 0; round < 5; round++) {
    const pages: MergedPage[] = [];
    for (let p = 0; p < 20; p++) {
      const path = `extracted/people/member-${p}`;
      const provenance = [0, 1, 2, 3].flatMap((f) => [0, 1, 2].map((m) => source(`fact-${f}`, 1 + round * 1_000 + p * 40 + f * 3 + m)));
      sources += provenance.length;
      pages.push({ path, head: heads.get(path), content: `Extracted memory ${path}, round ${round}`, provenance });
    }
    const written = await writeMergedVersions(d1, CONVERSATION, AGENT, pages, new Date("2026-12-05T00:00:00.000Z"));
    expect(written.size).toBe(20);
    for (const page of pages) {
      const version = (page.head?.version ?? 0) + 1;
      const row = db.prepare("SELECT content_hash FROM conversation_memory_versions WHERE path = ? AND version = ?").get(page.path, version) as { content_hash: string };
      heads.set(page.path, { version, content: page.content, contentHash: row.content_hash });
    }
  }
  return sources;
}

/** The b-trees provenance is kept in: the table that keeps it and the one it replaced. */
const provenanceStats = (db: DatabaseSync) => btreeStats(db, ["extracted_sources", "conversation_memory_sources_v1", "conversation_memory_provenance_v1"]);

it("keeps each source of a fact as one entry of at most 100 bytes, its page by its id and its event's hash in the log only, and reads them back as written", async () => {
  const db = await migrated();
  const sources = await extract(db);
  expect(sources).toBe(1_200);
  const { bytes, entries } = provenanceStats(db);
  // One entry per source: no rowid table beside a primary-key index, no second index.
  expect(entries).toBe(sources);
  console.log(`a source of a fact: ${(bytes / sources).toFixed(1)} bytes`);
  // 190 before 0036, which spelled the page by the conversation's and agent's keys and its path, and the event's hash in hex.
  expect(bytes / sources).toBeLessThanOrEqual(100);
  // Read back: the newest version's sources of each fact, and the facts of the current pages.
  const d1 = d1Over(db);
  const read = await readConversationFactSources(d1, CONVERSATION, AGENT, "extracted/people/member-3", 5);
  expect(read).toEqual(
    [0, 1, 2, 3].flatMap((f) => [0, 1, 2].map((m) => ({ conversationId: CONVERSATION, version: 5, ...source(`fact-${f}`, 1 + 4 * 1_000 + 3 * 40 + f * 3 + m) }))),
  );
  const older = await readConversationFactSources(d1, CONVERSATION, AGENT, "extracted/people/member-3", 2);
  expect(older.map((s) => [s.version, s.seq])).toEqual([0, 1, 2, 3].flatMap((f) => [0, 1, 2].map((m) => [2, seqOf(1 + 1_000 + 3 * 40 + f * 3 + m)])));
  const facts = await readConversationFacts(d1, CONVERSATION, AGENT, undefined, 6, 2);
  // Six facts (member-0's four, member-1's first two), two sources each, oldest first, at version 5.
  const firstSix = [0, 1].flatMap((p) => [0, 1, 2, 3].map((f) => ({ p, f }))).slice(0, 6);
  expect(facts.map((f) => [f.path, f.factKey, f.seq, f.pageVersion])).toEqual(
    firstSix.flatMap(({ p, f }) => [0, 1].map((m) => [`extracted/people/member-${p}`, `fact-${f}`, seqOf(1 + 4 * 1_000 + p * 40 + f * 3 + m), 5])),
  );
  db.close();
});

/** A shard as it stood before 0027, with `pages` pages of one version each, every page with `perPage` sources in the old table. */
function before0027(pages: number, perPage: number): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql") && f < "0027").sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, '2026-12-05T00:00:00.000Z')").run(CONVERSATION);
  // The cited messages, in the log as it was kept then (its rows move to \`log\` in npm run migrate, 0031).
  const event = db.prepare("INSERT INTO events (conversation_id, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES (?, ?, 'source', ?, 0, ?, ?, '2026-12-05T00:00:00.000Z')");
  for (let seq = 1; seq <= CITED; seq++) event.run(CONVERSATION, seq, message(seq).idempotencyKey, canonicalJson(message(seq).body), hashOf(seq));
  const version = db.prepare(
    "INSERT INTO conversation_memory_versions (conversation_id, agent_id, path, version, content, content_hash, chars, deleted, created_at) VALUES (?, ?, ?, 1, 'facts', ?, 5, 0, '2026-12-05T00:00:00.000Z')",
  );
  const old = db.prepare(
    "INSERT INTO conversation_memory_provenance (conversation_id, agent_id, path, version, fact_key, message_id, seq, event_hash, run_id) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?)",
  );
  db.exec("BEGIN");
  for (let p = 0; p < pages; p++) {
    const path = `extracted/topics/topic-${p}`;
    version.run(CONVERSATION, AGENT, path, hex(p));
    for (let i = 0; i < perPage; i++) {
      const s = source(`fact-${i % 7}`, 1 + p * perPage + i);
      old.run(CONVERSATION, AGENT, path, s.factKey, s.messageId, s.seq, s.eventHash, s.runId);
    }
  }
  db.exec("COMMIT");
  return db;
}


const count = (db: DatabaseSync, table: string): number => Number((db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n);

it("moves the sources stored before 0027 a batch at a time, losing none, while a Worker not yet redeployed reads and writes them under the old name", async () => {
  // 30 pages of 750 sources: 22,500 rows, more than two batches.
  const db = before0027(30, 750);
  const d1 = d1Over(db);
  const expected = [0, 17, 29].map((p) => [...Array(750).keys()].map((i) => ({ p, i, s: source(`fact-${i % 7}`, 1 + p * 750 + i) })));
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql") && f >= "0027").sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
  expect(22_500).toBeGreaterThan(2 * SOURCES_MOVE.perBatch);

  // A row stored before the migration and not yet copied cannot be deleted.
  expect(() => db.prepare("DELETE FROM conversation_memory_provenance_v1 WHERE rowid = 1").run()).toThrow(/holds it exactly/);
  // A Worker not yet redeployed writes under the old name, as it did (INSERT OR IGNORE … SELECT): the row lands in the new table.
  db.prepare(
    `INSERT OR IGNORE INTO conversation_memory_provenance (conversation_id, agent_id, path, version, fact_key, message_id, seq, event_hash, run_id)
     SELECT ?, ?, 'extracted/topics/topic-0', 1, 'late', 'm-late', ?, ?, 'ext_late'`,
  ).run(CONVERSATION, AGENT, seqOf(9_999), hashOf(seqOf(9_999)));
  expect(count(db, "conversation_memory_sources")).toBe(1);
  // ... and reads every source under the old name, whatever the move has done so far.
  const oldRead = (): unknown[] =>
    db.prepare("SELECT fact_key, seq, event_hash FROM conversation_memory_provenance WHERE conversation_id = ? AND agent_id = ? AND path = 'extracted/topics/topic-17' ORDER BY fact_key, seq").all(CONVERSATION, AGENT);
  const seenBefore = oldRead();
  expect(seenBefore).toHaveLength(750);
  const first = await backfillOver(db).rows<{ id: number }>(SOURCES_MOVE.oldest);
  await backfillOver(db).write(SOURCES_MOVE.batch(first[0]?.id ?? 0, 2_000));
  expect(count(db, "conversation_memory_provenance_v1")).toBe(22_500 - 2_000);
  expect(oldRead()).toEqual(seenBefore);
  expect(count(db, "conversation_memory_provenance")).toBe(22_501);

  // Each batch of the move reports how far it got (the backfill's other steps report too, unmoved).
  const batches: number[] = [];
  const done = await runBackfill(backfillOver(db), "shard", (progress) => {
    if (progress.sourcesThroughId !== (batches.at(-1) ?? 0)) batches.push(progress.sourcesThroughId);
  });
  expect(batches).toEqual([12_000, 22_000, 32_000]);
  expect(done.sourcesThroughId).toBe(32_000);
  expect(count(db, "conversation_memory_provenance_v1")).toBe(0);
  expect(oldRead()).toEqual(seenBefore);
  expect(count(db, "conversation_memory_sources")).toBe(22_501);
  for (const page of expected) {
    const p = page[0]?.p ?? -1;
    const read = await readConversationFactSources(d1, CONVERSATION, AGENT, `extracted/topics/topic-${p}`, 1);
    const late = p === 0 ? [{ conversationId: CONVERSATION, version: 1, factKey: "late", messageId: "m-late", seq: seqOf(9_999), eventHash: hashOf(seqOf(9_999)), runId: "ext_late" }] : [];
    const want = [...page.map(({ s }) => ({ conversationId: CONVERSATION, version: 1, ...s })), ...late].sort((a, b) => (a.factKey === b.factKey ? a.seq - b.seq : a.factKey < b.factKey ? -1 : 1));
    expect(read).toEqual(want);
  }
  // Run again: nothing left to move.
  const again = await runBackfill(backfillOver(db), "shard");
  expect(again.sourcesThroughId).toBe(0);
  expect(count(db, "conversation_memory_sources")).toBe(22_501);
  db.close();
});
