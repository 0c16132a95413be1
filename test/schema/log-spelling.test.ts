import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { skippedRun } from "../../src/core/preflight-decider";
import { compactSource, storedBody } from "../../src/core/stored-body";
import { releaseLog } from "../../src/storage/search-backfill";
import { readPreflightSizes } from "../../src/storage/shard/context-sizes";
import { readAllEvents, readEventsByKeys } from "../../src/storage/shard/events";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { PLACED_TURNS } from "../support/placed-turns";
import { migrateShard } from "./shard-migrations";
import { backfillOver, d1Over } from "./sqlite-d1";

/**
 * The log spelled short (migrations/shard/0033): a skipped run's key as its compactor's integer key
 * and its source's number, its body as three sizes; a source's body with its field names not
 * spelled again. Through the deploy: the log a Worker from before it
 * wrote, the new Worker before the release (which spells it long, so the old one can still read
 * it), the release, and after it; one skipped run per compactor and source in either spelling.
 */

const CONVERSATION = "telegram:7123456789:-1001987654321";
const AT = "2026-12-06T10:00:00.000Z";

const source = (n: number): EventInput =>
  eventInputSchema.parse({ kind: "source", idempotencyKey: `s${n}`, body: { messageId: `m${n}`, author: { id: "u1", name: "Ada" }, text: `Message ${n}.` } });
const run = (compactor: string, sourceSeq: number, chars = 10 * sourceSeq): EventInput =>
  skippedRun({ compactorId: compactor, sourceSeq, active: { chars, messages: sourceSeq }, policy: { triggerInputChars: 1_000_000, retainRecentChars: 10_000 } as never }, "below_trigger");
const planned = (inputs: readonly EventInput[], first: number) => inputs.map((input, i) => ({ input, hash: eventHash(CONVERSATION, input), seq: first + i }));

/** The log's rows as stored: key and body as the row spells them. */
const rows = (db: DatabaseSync) => db.prepare("SELECT seq, idempotency_key AS key, body FROM log ORDER BY seq").all() as { seq: number; key: string; body: string }[];

/** A Worker from before 0033: its rows as it writes them, the key whole and the body as six values. */
function oldWorker(db: DatabaseSync, seq: number, input: EventInput): void {
  db.prepare(
    `INSERT INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at)
     SELECT k.id, ?2, ?3, ?4, 0, ?5, unhex(?6), 0 FROM conversation_keys k WHERE k.conversation_id = ?1
     ON CONFLICT (conversation_key, idempotency_key) DO NOTHING`,
  ).run(CONVERSATION, seq, input.kind, input.idempotencyKey, storedBody(input.kind, input.body), eventHash(CONVERSATION, input));
}

it("spells skipped runs and sources long until the release and short after it, reads every spelling back as the events appended, and keeps one per compactor and source", async () => {
  // A shard in use before 0033: a source and its skipped run, as that Worker appended them.
  const db = new DatabaseSync(":memory:");
  migrateShard(db, "", "0033");
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, ?)").run(CONVERSATION, AT);
  oldWorker(db, 1, source(1));
  oldWorker(db, 2, run("a", 1));
  migrateShard(db, "0033");
  expect(db.prepare("SELECT short FROM log_spelling").get()).toEqual({ short: 0 });
  const d1 = d1Over(db);

  // The new Worker, uploaded, before the release: the old one may still read the log, so it gets the long spelling.
  await insertEvents(d1, CONVERSATION, planned([source(2)], 3), AT, { followers: { runs: planned([run("a", 3)], 4), revision: 0 } });
  expect(rows(db).slice(2)).toEqual([
    { seq: 3, key: "s2", body: '{"author":{"id":"u1","name":"Ada"},"messageId":"m2","text":"Message 2."}' },
    { seq: 4, key: "run:pf_a_3:skipped", body: '["a",3,30,3,1000000,"below_trigger"]' },
  ]);

  // The release. The first skipped run of each compactor after it is still spelled whole, and gives
  // the compactor its key (`log_compactor_key`): an append costs no statement for it.
  await releaseLog(backfillOver(db));
  expect(db.prepare("SELECT short FROM log_spelling").get()).toEqual({ short: 1 });
  await insertEvents(d1, CONVERSATION, planned([source(3)], 5), AT, { followers: { runs: planned([run("a", 5), run("b.compactor", 5)], 6), revision: 0 } });
  expect(db.prepare("SELECT id, compactor_id FROM compactor_keys ORDER BY id").all()).toEqual([
    { id: 1, compactor_id: "a" },
    { id: 2, compactor_id: "b.compactor" },
  ]);
  // From then on, short: a source served by both, and a batch with a skip of another reason.
  await insertEvents(d1, CONVERSATION, planned([source(4)], 8), AT, { followers: { runs: planned([run("a", 8), run("b.compactor", 8)], 9), revision: 0 } });
  const inFlight = skippedRun({ compactorId: "a", sourceSeq: 11, active: { chars: 110, messages: 11 }, policy: { triggerInputChars: 50, retainRecentChars: 10 } as never }, "compaction_in_flight");
  await insertEvents(d1, CONVERSATION, planned([source(5), inFlight], 11), AT);
  expect(rows(db).slice(5)).toEqual([
    { seq: 6, key: "run:pf_a_5:skipped", body: '["a",5,50,5,1000000,"below_trigger"]' },
    { seq: 7, key: "run:pf_b.compactor_5:skipped", body: '["b.compactor",5,50,5,1000000,"below_trigger"]' },
    { seq: 8, key: "s4", body: '{"a":["u1","Ada"],"messageId":"m4","text":"Message 4."}' },
    { seq: 9, key: "1 8", body: "[80,8,1000000]" },
    { seq: 10, key: "2 8", body: "[80,8,1000000]" },
    { seq: 11, key: "s5", body: '{"a":["u1","Ada"],"messageId":"m5","text":"Message 5."}' },
    { seq: 12, key: "1 11", body: '[110,11,50,"compaction_in_flight"]' },
  ]);

  // Every row reads back as the event appended, with the hash it was appended with.
  const appended = [source(1), run("a", 1), source(2), run("a", 3), source(3), run("a", 5), run("b.compactor", 5), source(4), run("a", 8), run("b.compactor", 8), source(5), inFlight];
  const read = await readAllEvents(d1, CONVERSATION);
  expect(read.map(({ seq, kind, idempotencyKey, sensitive, body, hash }) => ({ seq, kind, idempotencyKey, sensitive, body, hash }))).toEqual(
    appended.map((input, i) => ({ seq: i + 1, kind: input.kind, idempotencyKey: input.idempotencyKey, sensitive: false, body: input.body, hash: eventHash(CONVERSATION, input) })),
  );
  // And each is found by its key, whichever way its row spells it.
  const byKey = await readEventsByKeys(d1, CONVERSATION, ["run:pf_a_1:skipped", "run:pf_a_5:skipped", "run:pf_a_8:skipped", "run:pf_b.compactor_8:skipped", "run:pf_a_11:skipped", "run:pf_c_8:skipped"]);
  expect([...byKey.keys()].sort()).toEqual(["run:pf_a_11:skipped", "run:pf_a_1:skipped", "run:pf_a_5:skipped", "run:pf_a_8:skipped", "run:pf_b.compactor_8:skipped"]);

  // A skip appended again after the release, stored whole before it: found, not stored twice.
  const again = await insertEvents(d1, CONVERSATION, planned([run("a", 3)], 13), AT);
  expect(again.applied).toEqual([false]);
  expect(again.rows.get("run:pf_a_3:skipped")?.seq).toBe(4);
  // A Worker from before 0033 appending a skip the log holds short: not stored twice either.
  oldWorker(db, 13, run("a", 8));
  expect(rows(db)).toHaveLength(12);

  // A turn's author is read from either spelling of its source.
  expect(db.prepare(`SELECT message_id, seq, author_id, author_name FROM (${PLACED_TURNS}) ORDER BY seq`).all()).toEqual(
    [1, 3, 5, 8, 11].map((seq, i) => ({ message_id: `m${i + 1}`, seq, author_id: "u1", author_name: "Ada" })),
  );

  // The inspector's size chart reads each spelling.
  expect(await readPreflightSizes(d1, CONVERSATION, "a", 10, 100)).toEqual([
    { seq: 1, activeChars: 10, triggerChars: 1_000_000, planned: false },
    { seq: 3, activeChars: 30, triggerChars: 1_000_000, planned: false },
    { seq: 5, activeChars: 50, triggerChars: 1_000_000, planned: false },
    { seq: 8, activeChars: 80, triggerChars: 1_000_000, planned: false },
    { seq: 11, activeChars: 110, triggerChars: 50, planned: false },
  ]);
  expect(await readPreflightSizes(d1, CONVERSATION, "b.compactor", 10, 100)).toEqual([
    { seq: 5, activeChars: 50, triggerChars: 1_000_000, planned: false },
    { seq: 8, activeChars: 80, triggerChars: 1_000_000, planned: false },
  ]);
  db.close();
});

it("starts a database that holds no conversation yet with the log spelled short", () => {
  const db = new DatabaseSync(":memory:");
  migrateShard(db);
  expect(db.prepare("SELECT short FROM log_spelling").get()).toEqual({ short: 1 });
  db.close();
});

it("stores a source's short body exactly, its text carried once, for any text in any script", async () => {
  const { default: fc } = await import("fast-check");
  const db = new DatabaseSync(":memory:");
  migrateShard(db);
  const d1 = d1Over(db);
  let seq = 0;
  await fc.assert(
    fc.asyncProperty(fc.string({ unit: "grapheme", maxLength: 30 }), fc.constantFrom("2026-12-06T10:00:00.000Z", "2026-12-06T10:00:00+01:00"), async (text, sentAt) => {
      seq += 1;
      const input = eventInputSchema.parse({ kind: "source", idempotencyKey: `p${seq}`, body: { messageId: `m${seq}`, author: { id: "u1", name: "Ada 😀" }, sentAt, text } });
      await insertEvents(d1, CONVERSATION, planned([input], seq), AT);
      const row = db.prepare("SELECT body FROM log WHERE seq = ?").get(seq) as { body: string };
      expect(row.body).toBe(compactSource("source", input.body));
      expect((await readEventsByKeys(d1, CONVERSATION, [`p${seq}`])).get(`p${seq}`)?.body).toEqual(input.body);
    }),
    { numRuns: 200 },
  );
  db.close();
});
