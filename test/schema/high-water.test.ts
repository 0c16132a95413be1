import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { skippedRun } from "../../src/core/preflight-decider";
import { releaseLog } from "../../src/storage/search-backfill";
import { readHead } from "../../src/storage/shard/events";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { migrateShard } from "./shard-migrations";
import { backfillOver, d1Over } from "./sqlite-d1";

/**
 * The conversation's high-water mark and its count of texts (migrations/shard/0032): written once an
 * append, whatever the append holds, and held to what the log stores: it only advances, never past
 * an event stored, and a row must follow both it and the log's own newest row.
 */

const CONVERSATION = "telegram:7123456789:-1001987654321";
const AT = "2026-12-06T10:00:00.000Z";

/** Every write of the conversation's row, counted beside it. */
function countHeadWrites(db: DatabaseSync): DatabaseSync {
  db.exec("CREATE TEMP TABLE head_writes (n INTEGER NOT NULL); INSERT INTO head_writes VALUES (0)");
  db.exec("CREATE TEMP TRIGGER count_head_writes AFTER UPDATE ON conversations BEGIN UPDATE head_writes SET n = n + 1; END");
  return db;
}

function migrated(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  migrateShard(db);
  return countHeadWrites(db);
}

const source = (n: number): EventInput =>
  eventInputSchema.parse({ kind: "source", idempotencyKey: `s${n}`, body: { messageId: `m${n}`, author: { id: "u1", name: "Ada" }, text: `Message ${n}.` } });
const run = (compactor: string, sourceSeq: number): EventInput =>
  skippedRun({ compactorId: compactor, sourceSeq, active: { chars: 10, messages: 1 }, policy: { triggerInputChars: 1_000_000, retainRecentChars: 10_000 } as never }, "below_trigger");
const planned = (inputs: readonly EventInput[], first: number) => inputs.map((input, i) => ({ input, hash: eventHash(CONVERSATION, input), seq: first + i }));

const head = (db: DatabaseSync) => db.prepare("SELECT last_seq, texts FROM conversations WHERE id = ?").get(CONVERSATION) as { last_seq: number; texts: number };
const writes = (db: DatabaseSync) => Number((db.prepare("SELECT n FROM temp.head_writes").get() as { n: number }).n);

it("writes the mark once an append: a source with three compactors' skipped runs, a batch, a replay that writes nothing", async () => {
  const db = migrated();
  const d1 = d1Over(db);
  const [first] = planned([source(1)], 1);
  const followers = { runs: planned(["a", "b", "c"].map((c) => run(c, 1)), 2), revision: 0 };
  expect((await insertEvents(d1, CONVERSATION, [first!], AT, { followers })).applied).toEqual([true, true, true, true]);
  expect(head(db)).toEqual({ last_seq: 4, texts: 1 });
  expect(writes(db)).toBe(1);

  const edit = eventInputSchema.parse({ kind: "correction", idempotencyKey: "e1", body: { action: "edit", targetMessageId: "m1", text: "Message 1, edited." } });
  const batch = planned([source(2), run("a", 5), source(3), edit, eventInputSchema.parse({ kind: "correction", idempotencyKey: "x1", body: { action: "delete", targetMessageId: "m2" } })], 5);
  await insertEvents(d1, CONVERSATION, batch, AT);
  // Two sources and an edit are texts; a run and a deletion are not.
  expect(head(db)).toEqual({ last_seq: 9, texts: 4 });
  expect(writes(db)).toBe(2);

  // A replay (its key stored; planned, as the object plans a single append, after the head) stores
  // nothing and writes nothing.
  const replay = await insertEvents(d1, CONVERSATION, [{ ...batch[0]!, seq: 10 }], AT);
  expect(replay.applied).toEqual([false]);
  expect(head(db)).toEqual({ last_seq: 9, texts: 4 });
  expect(writes(db)).toBe(2);
  db.close();
});

it("only advances, never past an event stored, and a row follows both the mark and the log's newest row", async () => {
  const db = migrated();
  const d1 = d1Over(db);
  await insertEvents(d1, CONVERSATION, planned([source(1), source(2), source(3)], 1), AT);
  expect(head(db).last_seq).toBe(3);
  expect(() => db.prepare("UPDATE conversations SET last_seq = 2 WHERE id = ?").run(CONVERSATION)).toThrow(/only advances/);
  expect(() => db.prepare("UPDATE conversations SET last_seq = 4 WHERE id = ?").run(CONVERSATION)).toThrow(/never past an event stored/);
  const raw = (seq: number) =>
    db
      .prepare("INSERT INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES ((SELECT id FROM conversation_keys WHERE conversation_id = ?), ?, 'run', ?, 0, '{}', unhex(?), 0)")
      .run(CONVERSATION, seq, `raw${seq}`, "0".repeat(64));
  expect(() => raw(5)).toThrow(/sequence must be the next/);
  expect(() => raw(3)).toThrow(/sequence must be the next/);
  // A row written behind the service's back, without the mark: the next one follows it, and the
  // head the object reads is that row's.
  raw(4);
  expect(() => raw(4 + 2)).toThrow(/sequence must be the next/);
  expect(await readHead(d1, CONVERSATION)).toBe(4);
  await insertEvents(d1, CONVERSATION, planned([source(4)], 5), AT);
  expect(head(db)).toEqual({ last_seq: 5, texts: 4 });
  // The newest event deleted behind the service's back: its number stays taken.
  db.exec("DROP TRIGGER log_immutable_delete");
  db.prepare("DELETE FROM log WHERE seq = 5").run();
  expect(await readHead(d1, CONVERSATION)).toBe(5);
  expect(() => raw(5)).toThrow(/sequence must be the next/);
  raw(6);
  db.close();
});

it("writes the mark once a row while a Worker from before 0032 may append, and once an append after the release", async () => {
  // A shard in use before 0032: a conversation with events, as the Worker of 0031 appended them.
  const db = new DatabaseSync(":memory:");
  migrateShard(db, "", "0032");
  const d1 = d1Over(db);
  // That Worker's rows, with no statement for the mark.
  const oldWorker = db.prepare(
    `INSERT INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at)
     SELECT k.id, ?2, ?3, ?4, 0, ?5, unhex(?6), 0 FROM conversation_keys k WHERE k.conversation_id = ?1`,
  );
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, ?)").run(CONVERSATION, AT);
  for (const [i, input] of [source(1), source(2)].entries()) oldWorker.run(CONVERSATION, 1 + i, input.kind, input.idempotencyKey, JSON.stringify(input.body), eventHash(CONVERSATION, input));
  migrateShard(db, "0032");
  countHeadWrites(db);
  // That Worker, still running until its replacement's upload: each row moves the mark, so the head
  // it reads back is where its next row goes.
  for (const [i, input] of [source(3), run("a", 3)].entries()) oldWorker.run(CONVERSATION, 3 + i, input.kind, input.idempotencyKey, JSON.stringify(input.body), eventHash(CONVERSATION, input));
  expect(head(db)).toEqual({ last_seq: 4, texts: 3 });
  expect(db.prepare("SELECT last_seq FROM conversations WHERE id = ?").get(CONVERSATION)).toEqual({ last_seq: await readHead(d1, CONVERSATION) });
  // The new Worker, uploaded: its statement finds the mark moved already, and counts nothing twice.
  await insertEvents(d1, CONVERSATION, planned([source(4)], 5), AT, { followers: { runs: planned([run("a", 5)], 6), revision: 0 } });
  expect(head(db)).toEqual({ last_seq: 6, texts: 4 });
  expect(writes(db)).toBe(4);
  // The release: once an append from now on.
  await releaseLog(backfillOver(db));
  expect(db.prepare("SELECT per_append FROM high_water_mode").get()).toEqual({ per_append: 1 });
  await insertEvents(d1, CONVERSATION, planned([source(5)], 7), AT, { followers: { runs: planned([run("a", 7), run("b", 7)], 8), revision: 0 } });
  expect(head(db)).toEqual({ last_seq: 9, texts: 5 });
  expect(writes(db)).toBe(5);
  db.close();
});

it("starts a database that holds no conversation yet at once an append", () => {
  const db = new DatabaseSync(":memory:");
  migrateShard(db);
  expect(db.prepare("SELECT per_append FROM high_water_mode").get()).toEqual({ per_append: 1 });
  db.close();
});
