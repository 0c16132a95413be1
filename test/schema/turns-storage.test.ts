import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { runBackfill } from "../../src/storage/search-backfill";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { TURNS_MOVE } from "../../src/storage/shard/table-moves";
import { PLACED_TURNS } from "../support/placed-turns";
import { btreeStats } from "./btree-stats";
import { backfillOver, d1Over } from "./sqlite-d1";

/**
 * What the turn index costs to keep: the fold of a message or reply an event came back to (its
 * winning edit, deletion, delivery) is one entry of the table and one of its sequence index (one
 * more for a turn with an edit), each keyed by the conversation's small integer key rather than its
 * text id; a message nothing came back to is read from its own row in the log (0034).
 * Measured in the migrated schema with SQLite's own page statistics (`dbstat`), seeded through the
 * log's own writer with a Telegram group's conversation id (the ids a deployment has, not the
 * bench's short ones).
 */

const SHARD = fileURLToPath(new URL("../../migrations/shard/", import.meta.url));
const CONVERSATION = "telegram:7123456789:-1001987654321";

function migratedShard(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql")).sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
  return db;
}

/** `messages` messages of six members, every tenth edited, every tenth answered by an agent whose reply is delivered. */
function chat(messages: number): EventInput[] {
  const events: unknown[] = [];
  for (let i = 0; i < messages; i++) {
    const member = i % 6;
    events.push({ kind: "source", idempotencyKey: `tg:update:${900_000 + i}`, body: { messageId: String(5_000 + i), author: { id: String(100_000_000 + member), name: `Member ${member}`, username: `member${member}` }, text: `message ${i} about the offsite budget` } });
    if (i % 10 === 3) events.push({ kind: "correction", idempotencyKey: `tg:edit:${900_000 + i}`, body: { action: "edit", targetMessageId: String(5_000 + i), text: `message ${i}, edited`, editedAt: "2026-12-05T10:00:00.000Z" } });
    if (i % 10 === 7) {
      events.push({ kind: "proposal", idempotencyKey: `proposal:p${i}`, body: { proposalId: `p${i}`, agentId: "helper", replyToMessageId: String(5_000 + i), text: `noted ${i}` } });
      events.push({ kind: "delivery", idempotencyKey: `delivery:p${i}`, body: { status: "delivered", proposalId: `p${i}`, externalMessageId: String(70_000 + i) } });
    }
  }
  return events.map((event) => eventInputSchema.parse(event));
}

async function seedChat(db: DatabaseSync, conversationId: string, messages: number): Promise<void> {
  const planned = chat(messages).map((input, i) => ({ input, hash: eventHash(conversationId, input), seq: i + 1 }));
  const { applied } = await insertEvents(d1Over(db), conversationId, planned, "2026-12-05T10:00:00.000Z");
  expect(applied.every(Boolean)).toBe(true);
}

/** The turn index's b-trees: the table that keeps it and the one it replaced. */
const turnStats = (db: DatabaseSync) => btreeStats(db, ["turn_index", "turn_index_v1", "turns"]);

it("keeps a turn only once an event comes back to it (an edit, a reply's delivery): two entries (three with an edit), at most 30 bytes a message where every message took 90", async () => {
  // Enough turns that a table's last, part-filled page is a small share of its bytes. Of 3,000
  // messages, 300 are edited and 300 answered by a delivered reply.
  const messages = 3_000;
  const folded = 300 + 300;
  // Before 0034's release every message wrote its fold: the row and its sequence index's entry.
  const before = migratedShard();
  before.exec("UPDATE turn_rows SET sparse = 0");
  await seedChat(before, CONVERSATION, messages);
  const whole = turnStats(before);
  expect(whole.entries).toBe(2 * (messages + 300) + 300);
  expect(whole.bytes / (messages + 300)).toBeLessThanOrEqual(90);
  before.close();
  // Now the other 2,700 messages are read from their own rows in the log: nothing about them is stored twice.
  const db = migratedShard();
  await seedChat(db, CONVERSATION, messages);
  const { bytes, entries } = turnStats(db);
  expect(entries).toBe(2 * folded + 300);
  expect(bytes / messages).toBeLessThanOrEqual(30);
  expect(db.prepare("SELECT COUNT(*) AS n FROM turns WHERE role = 'user' AND edit_seq IS NULL").get()).toEqual({ n: 0 });
  console.log(`turns: ${whole.bytes} bytes for ${messages} messages before, ${bytes} now (${(whole.bytes / messages).toFixed(1)} -> ${(bytes / messages).toFixed(1)} a message)`);
  db.close();
});

/** A shard built from the migrations whose names sort below `below` (all of them when undefined). */
function shardThrough(below?: string): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql") && (below === undefined || f < below)).sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, '2026-12-05T00:00:00.000Z')").run(CONVERSATION);
  return db;
}

/** Appends `events` as the log's insert does (its triggers feed the turn index), from sequence `from`. */
function append(db: DatabaseSync, from: number, events: readonly EventInput[]): void {
  const insert = db.prepare("INSERT INTO events (conversation_id, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, '2026-12-05T00:00:00.000Z')");
  db.exec("BEGIN");
  for (const [i, event] of events.entries()) insert.run(CONVERSATION, from + i, event.kind, event.idempotencyKey, event.sensitive ? 1 : 0, JSON.stringify(event.body), "0".repeat(64));
  db.exec("COMMIT");
}

/** Events after the first chat that speak about its messages (an edit, a deletion, a late delivery) and add new ones. */
function later(): EventInput[] {
  const events: unknown[] = [
    { kind: "correction", idempotencyKey: "later:edit", body: { action: "edit", targetMessageId: "5005", text: "edited later", editedAt: "2026-12-05T11:00:00.000Z" } },
    { kind: "correction", idempotencyKey: "later:delete", body: { action: "delete", targetMessageId: "5006" } },
    { kind: "proposal", idempotencyKey: "later:proposal", body: { proposalId: "p-late", agentId: "helper", replyToMessageId: "5001", text: "late reply" } },
    { kind: "delivery", idempotencyKey: "later:delivery", body: { status: "delivered", proposalId: "p-late", externalMessageId: "1" } },
    { kind: "source", idempotencyKey: "later:source", body: { messageId: "9999", author: { id: "42", name: "Newcomer" }, text: "hello all" } },
  ];
  return events.map((event) => eventInputSchema.parse(event));
}

const FOLD = "conversation_id, role, message_id, seq, author_id, author_name, origin_sensitive, edit_seq, edit_ms, edit_sensitive, deleted, delivered";
/** Every turn under the old name (the view a Worker not yet redeployed reads), in a stable order. */
const foldOf = (db: DatabaseSync): unknown[] => db.prepare(`SELECT ${FOLD} FROM turn_index ORDER BY role, message_id`).all();

it("moves the turns stored before 0028 a batch at a time into the fold a log appended after it would hold, readable under the old name throughout", async () => {
  const first = chat(2_500);
  const db = shardThrough("0028");
  append(db, 1, first);
  const before = foldOf(db);
  expect(before.length).toBe(2_500 + 250);
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql") && f >= "0028").sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
  expect(foldOf(db)).toEqual(before);
  // A row no event moved and no batch copied cannot be deleted.
  expect(() => db.prepare("DELETE FROM turn_index_v1 WHERE rowid = 1").run()).toThrow(/holds its message/);

  // Events about old messages move each one's row first and continue its fold; a batch of the move runs between them.
  const [edit, deletion, ...rest] = later();
  append(db, first.length + 1, [edit!, deletion!]);
  const oldest = db.prepare(TURNS_MOVE.oldest.sql).all() as { id: number }[];
  for (const statement of TURNS_MOVE.batch(oldest[0]?.id ?? 0, 1_000)) db.prepare(statement.sql).run(...statement.params);
  append(db, first.length + 3, rest);
  const moved = await runBackfill(backfillOver(db), "shard");
  expect(moved.turnsThroughId).toBe(1_000 + TURNS_MOVE.perBatch);
  expect(Number((db.prepare("SELECT COUNT(*) AS n FROM turn_index_v1").get() as { n: number }).n)).toBe(0);

  // The one write a Worker not yet redeployed makes under the old name (a source's folded author, its statement as it was) lands in `turns`.
  db.prepare("UPDATE turn_index SET author_terms = ? WHERE conversation_id = ? AND role = 'user' AND message_id = ? AND seq = ?").run("newcomer", CONVERSATION, "9999", first.length + 5);
  expect(db.prepare("SELECT author_terms FROM turns WHERE message_id = '9999'").get()).toEqual({ author_terms: "newcomer" });
  db.exec("UPDATE turns SET author_terms = NULL WHERE message_id = '9999'");

  // The same log appended to a shard that had `turns` from the start (and, since 0034, reads a turn's
  // origin from the log) places the same turns.
  const fresh = shardThrough();
  append(fresh, 1, [...first, ...later()]);
  const placed = (shard: DatabaseSync) => shard.prepare(PLACED_TURNS).all();
  expect(placed(db)).toEqual(placed(fresh));
  expect(placed(db).length).toBe(2_750 + 2);
  db.close();
  fresh.close();
});
