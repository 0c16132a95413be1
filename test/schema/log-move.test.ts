import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { storedBody } from "../../src/core/stored-body";
import { releaseLog, runBackfill } from "../../src/storage/search-backfill";
import { readAllEvents } from "../../src/storage/shard/events";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { LOG_COPY } from "../../src/storage/shard/table-moves";
import { backfillOver, d1Over } from "./sqlite-d1";
import { PLACED_TURNS } from "../support/placed-turns";

/**
 * The log's move to `log` (migrations/shard/0031) as a deployment runs it: the migration while the
 * Worker before it still appends to `events`, `npm run migrate`'s copy, the new Worker's appends,
 * then the release of `events` once it is live. Nothing is lost, nothing counted or indexed twice:
 * the result equals, event for event and turn for turn, the same log appended to a shard that had
 * `log` from the start.
 */

const SHARD = fileURLToPath(new URL("../../migrations/shard/", import.meta.url));
const CONVERSATION = "telegram:7123456789:-1001987654321";
const AT = "2026-12-05T10:00:00.000Z";

function migrate(db: DatabaseSync, from: string, below?: string): void {
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql") && f >= from && (below === undefined || f < below)).sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
}

function shardThrough(below?: string): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  migrate(db, "", below);
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, ?)").run(CONVERSATION, AT);
  return db;
}

/** `events` appended from `from` with the Worker before 0031's own statement (an upsert on `events`). */
function oldWorkerAppends(db: DatabaseSync, from: number, events: readonly EventInput[]): void {
  const insert = db.prepare(
    `INSERT INTO events (conversation_id, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (conversation_id, idempotency_key) DO NOTHING`,
  );
  for (const [i, event] of events.entries()) insert.run(CONVERSATION, from + i, event.kind, event.idempotencyKey, event.sensitive ? 1 : 0, storedBody(event.kind, event.body), eventHash(CONVERSATION, event), AT);
}

async function newWorkerAppends(db: DatabaseSync, from: number, events: readonly EventInput[]): Promise<void> {
  const planned = events.map((input, i) => ({ input, hash: eventHash(CONVERSATION, input), seq: from + i }));
  const { applied } = await insertEvents(d1Over(db), CONVERSATION, planned, AT);
  expect(applied.every(Boolean)).toBe(true);
}

/** `messages` messages, every tenth edited, every tenth answered and delivered, every fifth followed by a run. */
function chat(prefix: string, messages: number): EventInput[] {
  const events: unknown[] = [];
  for (let i = 0; i < messages; i++) {
    const id = `${prefix}${i}`;
    events.push({ kind: "source", idempotencyKey: `tg:${id}`, body: { messageId: id, author: { id: String(100 + (i % 6)), name: `Member ${i % 6}` }, text: `message ${id} about the offsite` } });
    if (i % 10 === 3) events.push({ kind: "correction", idempotencyKey: `edit:${id}`, body: { action: "edit", targetMessageId: id, text: `message ${id}, edited`, editedAt: AT } });
    if (i % 10 === 7) {
      events.push({ kind: "proposal", idempotencyKey: `proposal:${id}`, body: { proposalId: `p${id}`, agentId: "helper", replyToMessageId: id, text: `noted ${id}` } });
      events.push({ kind: "delivery", idempotencyKey: `delivery:${id}`, body: { status: "delivered", proposalId: `p${id}`, externalMessageId: `x${id}` } });
    }
    if (i % 5 === 0) events.push({ kind: "run", idempotencyKey: `run:r${id}:skipped`, body: { runId: `r${id}`, agentId: "summarizer", role: "compactor", status: "skipped" } });
  }
  return events.map((event) => eventInputSchema.parse(event));
}

const turnsOf = (db: DatabaseSync) => db.prepare(PLACED_TURNS).all();
const headOf = (db: DatabaseSync) => db.prepare("SELECT last_seq, texts FROM conversations WHERE id = ?").get(CONVERSATION);
const countOf = (db: DatabaseSync, table: string) => Number((db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n);

it("moves the log stored before 0031 into `log` while the Worker before it still appends, then lets `events` go, losing nothing and counting nothing twice", async () => {
  const stored = chat("a", 1_500);
  const duringDeploy = chat("b", 30);
  const afterCopy = chat("c", 20);
  const newWorker = chat("d", 40);

  const db = shardThrough("0031");
  oldWorkerAppends(db, 1, stored);
  migrate(db, "0031");
  // The Worker before 0031 keeps appending (and replaying) while the copy has not run.
  let seq = stored.length + 1;
  oldWorkerAppends(db, seq, duringDeploy);
  seq += duringDeploy.length;
  oldWorkerAppends(db, seq, duringDeploy.slice(0, 1)); // a replay: its key exists, nothing is stored
  expect(countOf(db, "log")).toBe(duringDeploy.length);
  // One batch of the copy, more appends, then `npm run migrate`'s copy of the rest.
  const [next] = db.prepare(LOG_COPY.oldest.sql).all() as { id: number }[];
  for (const statement of LOG_COPY.batch(next?.id ?? 0, 500)) db.prepare(statement.sql).run(...statement.params);
  oldWorkerAppends(db, seq, afterCopy);
  seq += afterCopy.length;
  const copied = await runBackfill(backfillOver(db), "shard");
  expect(copied.logThroughId).toBeGreaterThan(500);
  expect(countOf(db, "log")).toBe(seq - 1);
  // A row `log` does not hold exactly cannot leave `events`.
  db.exec("DROP TRIGGER log_immutable_update");
  db.prepare("UPDATE log SET body = '{}' WHERE seq = 2").run();
  expect(() => db.prepare("DELETE FROM events WHERE seq = 2").run()).toThrow(/leaves only once log holds it/);
  db.prepare("UPDATE log SET body = ? WHERE seq = 2").run(storedBody(stored[1]!.kind, stored[1]!.body));
  db.exec("CREATE TRIGGER log_immutable_update BEFORE UPDATE ON log BEGIN SELECT RAISE(ABORT, 'log: rows are immutable'); END");

  // The new Worker, live: it appends to `log`; then the release empties `events`.
  await newWorkerAppends(db, seq, newWorker);
  seq += newWorker.length;
  expect(await releaseLog(backfillOver(db))).toBeGreaterThan(0);
  expect(countOf(db, "events")).toBe(0);
  await newWorkerAppends(db, seq, chat("e", 5));
  expect(() => db.prepare("INSERT INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES (1, ?, 'source', 'gap', 0, '{}', unhex(?), 0)").run(seq + 50, "0".repeat(64))).toThrow(/sequence must be the next/);

  // The same log appended to a shard that had `log` from the start.
  const fresh = shardThrough();
  const all = [...stored, ...duringDeploy, ...afterCopy, ...newWorker, ...chat("e", 5)];
  await newWorkerAppends(fresh, 1, all);
  expect(await readAllEvents(d1Over(db), CONVERSATION)).toEqual(await readAllEvents(d1Over(fresh), CONVERSATION));
  expect((await readAllEvents(d1Over(db), CONVERSATION)).length).toBe(all.length);
  expect(turnsOf(db)).toEqual(turnsOf(fresh));
  expect(headOf(db)).toEqual(headOf(fresh));
  db.close();
  fresh.close();
});
