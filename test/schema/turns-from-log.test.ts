import { DatabaseSync } from "node:sqlite";
import "../core/fast-check-seed";
import { expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { releaseLog } from "../../src/storage/search-backfill";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { conversationKey } from "../../src/storage/shard/keys";
import { searchTurns } from "../../src/storage/shard/turn-search";
import { FOLD_COLUMNS, PLACED_TURNS, placedTurns } from "../support/placed-turns";
import { migrateShard, withTodaysLogWriter } from "./shard-migrations";
import { backfillOver, d1Over } from "./sqlite-d1";

/**
 * A turn read from its origin's row in the log (migrations/shard/0034), through the deploy: a shard
 * whose every message wrote its fold before 0034, the new Worker before the release (every source
 * still writes its fold, which a Worker from before reads), the release, and after it (only an
 * event about a message writes its row). Whatever the table holds, the turns placed and what a
 * search finds are those of a shard that had each rule from its start.
 */

const CONVERSATION = "telegram:7123456789:-1001987654321";
const AT = "2026-12-06T10:00:00.000Z";
const ALI = "\u0639\u0644\u064A"; // with the Arabic yeh, which search folds to the Persian one

const parse = (event: unknown): EventInput => eventInputSchema.parse(event);
const source = (key: string, messageId: string, text: string, name = "Ada"): EventInput =>
  parse({ kind: "source", idempotencyKey: key, body: { messageId, author: { id: `u-${name}`, name }, text } });
const edit = (key: string, target: string, text: string, editedAt = AT): EventInput =>
  parse({ kind: "correction", idempotencyKey: key, body: { action: "edit", targetMessageId: target, text, editedAt } });
const deletion = (key: string, target: string): EventInput => parse({ kind: "correction", idempotencyKey: key, body: { action: "delete", targetMessageId: target } });
const reply = (id: string, to: string, text: string): EventInput[] => [
  parse({ kind: "proposal", idempotencyKey: `proposal:${id}`, body: { proposalId: id, agentId: "helper", replyToMessageId: to, text } }),
  parse({ kind: "delivery", idempotencyKey: `delivery:${id}`, body: { status: "delivered", proposalId: id, externalMessageId: `x-${id}` } }),
];

/** Before 0034: messages, an edit, a reply. */
const BEFORE = [
  source("s1", "m1", "The venue is the boathouse."),
  source("s2", "m2", "Budget is four hundred."),
  edit("e2", "m2", "Budget is five hundred."),
  ...reply("p1", "m1", "Noted: the boathouse venue."),
];
/** The new Worker, before the release. */
const WINDOW = [source("s3", "m3", "Catering from the bakery."), edit("e1", "m1", "The venue is the old boathouse.", "2026-12-06T10:05:00.000Z")];
/** After the release: what may come back to a message, in every order. */
const AFTER = [
  source("s4", "m4", "Parking behind the hall."),
  source("s5", "m5", "Music until ten.", ALI),
  edit("e5", "m5", "Music until eleven."),
  edit("e6", "m6", "Raffle prizes wrapped, edited before it arrived."),
  source("s6", "m6", "Raffle prizes wrapped."),
  deletion("d4", "m4"),
  source("s4-again", "m4", "Parking behind the hall, said twice."),
  ...reply("p2", "m3", "Noted: the bakery caters."),
  source("s7", "m7", "Parking is free after six."),
  edit("e3", "m3", "Catering from the bakery on Main."),
  deletion("d-missing", "m-missing"),
];

const planned = (inputs: readonly EventInput[], first: number) => inputs.map((input, i) => ({ input, hash: eventHash(CONVERSATION, input), seq: first + i }));

function shard(below?: string): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  migrateShard(db, "", below);
  // Today's log writer appends the events of every stage.
  withTodaysLogWriter(db);
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, ?)").run(CONVERSATION, AT);
  return db;
}

async function append(db: DatabaseSync, first: number, events: readonly EventInput[]): Promise<void> {
  const { applied } = await insertEvents(d1Over(db), CONVERSATION, planned(events, first), AT);
  expect(applied.every(Boolean)).toBe(true);
}

const foldedMessages = (db: DatabaseSync) => (db.prepare("SELECT message_id FROM turns ORDER BY message_id").all() as { message_id: string }[]).map((r) => r.message_id);
const placed = (db: DatabaseSync) => db.prepare(PLACED_TURNS).all();
const QUERIES = ["venue boathouse", "budget", "parking", "raffle", "music", ALI, "bakery catering", "noted"];
const searches = async (db: DatabaseSync) =>
  Promise.all(QUERIES.map(async (query) => (await searchTurns(d1Over(db), CONVERSATION, query, { historyAgents: ["helper"], admitSensitive: false }, 10)).map((hit) => [hit.seq, hit.messageId, hit.authorId, hit.content])));

it("places the same turns, and finds the same ones, whether every message wrote its fold or only the events about it did, through the deploy", async () => {
  const db = shard("0034");
  await append(db, 1, BEFORE);
  migrateShard(db, "0034");
  // The new Worker, uploaded, before the release: a Worker from before may still read `turns`, so every source writes its fold.
  expect(db.prepare("SELECT sparse FROM turn_rows").get()).toEqual({ sparse: 0 });
  await append(db, BEFORE.length + 1, WINDOW);
  expect(foldedMessages(db)).toEqual(["m1", "m2", "m3", "p1"]);

  await releaseLog(backfillOver(db));
  expect(db.prepare("SELECT sparse FROM turn_rows").get()).toEqual({ sparse: 1 });
  const first = BEFORE.length + WINDOW.length + 1;
  await append(db, first, AFTER);
  // After it, a message gets a row only when an event came back to it (m7: none did). m5's row holds
  // its author's folded name, which its edit's terms were written with; m6's edit came first, and
  // its message's arrival gave the row its place; m-missing's deletion waits for a message.
  expect(foldedMessages(db)).toEqual(["m-missing", "m1", "m2", "m3", "m4", "m5", "m6", "p1", "p2"]);
  const rowOf = (id: string) => db.prepare("SELECT seq, author_terms, edit_seq, deleted FROM turns WHERE message_id = ?").get(id);
  expect(rowOf("m5")).toEqual({ seq: first + 1, author_terms: "\u0639\u0644\u06CC", edit_seq: first + 2, deleted: 0 });
  expect(rowOf("m6")).toEqual({ seq: first + 4, author_terms: null, edit_seq: first + 3, deleted: 0 });
  expect(rowOf("m4")).toEqual({ seq: first, author_terms: null, edit_seq: null, deleted: 1 });
  expect(rowOf("m-missing")).toEqual({ seq: null, author_terms: null, edit_seq: null, deleted: 1 });

  // A shard that had each rule from its start.
  const all = [...BEFORE, ...WINDOW, ...AFTER];
  const sparse = shard();
  await append(sparse, 1, all);
  const whole = shard();
  whole.exec("UPDATE turn_rows SET sparse = 0");
  await append(whole, 1, all);
  expect(foldedMessages(whole)).toEqual(["m-missing", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "p1", "p2"]);
  expect(foldedMessages(sparse)).toEqual(["m-missing", "m1", "m2", "m3", "m4", "m5", "m6", "p1", "p2"]);

  // Where every message wrote its fold, the turns read from the log are the fold the table holds.
  expect(placed(whole)).toEqual(whole.prepare(`SELECT ${FOLD_COLUMNS} FROM turns ORDER BY role, message_id`).all());
  expect(placed(db)).toEqual(placed(whole));
  expect(placed(sparse)).toEqual(placed(whole));
  // The second source with m4's id is no turn of its own; m7 is.
  expect(placed(whole).filter((t) => (t as { message_id: string }).message_id === "m4")).toHaveLength(1);
  expect(placed(whole).map((t) => (t as { message_id: string }).message_id)).toContain("m7");

  const found = await searches(whole);
  expect(await searches(db)).toEqual(found);
  expect(await searches(sparse)).toEqual(found);
  // What the searches find: the current texts, a deleted message never, the folded author by name.
  const flat = found.flat().map((hit) => hit[3]);
  expect(flat).toContain("The venue is the old boathouse.");
  expect(flat).toContain("Music until eleven.");
  expect(flat).toContain("Parking is free after six.");
  expect(flat.filter((text) => String(text).startsWith("Parking behind"))).toEqual([]);
  expect(found[QUERIES.indexOf(ALI)]?.[0]?.[1]).toBe("m5");
  for (const d of [db, sparse, whole]) d.close();
});

it("reads, for any events about any messages in any order, the fold a shard whose every message wrote it holds, and searches it alike", async () => {
  const { default: fc } = await import("fast-check");
  const id = fc.constantFrom("m1", "m2", "m3");
  const instant = fc.option(fc.constantFrom("2026-12-06T10:00:00.000Z", "2026-12-06T10:01:00Z", "2026-12-06T11:00:00+02:00"), { nil: undefined });
  const event = fc.oneof(
    fc.record({ kind: fc.constant("source" as const), id, name: fc.constantFrom("Ada", ALI), sensitive: fc.boolean() }),
    fc.record({ kind: fc.constant("edit" as const), id, at: instant, sensitive: fc.boolean() }),
    fc.record({ kind: fc.constant("delete" as const), id }),
    fc.record({ kind: fc.constant("proposal" as const), id: fc.constantFrom("p1", "p2") }),
    fc.record({ kind: fc.constant("delivery" as const), id: fc.constantFrom("p1", "p2"), delivered: fc.boolean() }),
  );
  const inputs = (drawn: readonly { kind: string; id: string; name?: string; sensitive?: boolean; at?: string | undefined; delivered?: boolean }[]): EventInput[] =>
    drawn.map((e, i) => {
      const key = `k${i}`;
      const text = `alpha ${e.kind} ${e.id} ${i}`;
      switch (e.kind) {
        case "source":
          return parse({ kind: "source", idempotencyKey: key, sensitive: e.sensitive, body: { messageId: e.id, author: { id: `u-${e.name}`, name: e.name }, text } });
        case "edit":
          return parse({ kind: "correction", idempotencyKey: key, sensitive: e.sensitive, body: { action: "edit", targetMessageId: e.id, text, ...(e.at === undefined ? {} : { editedAt: e.at }) } });
        case "delete":
          return parse({ kind: "correction", idempotencyKey: key, body: { action: "delete", targetMessageId: e.id } });
        case "proposal":
          return parse({ kind: "proposal", idempotencyKey: key, body: { proposalId: e.id, agentId: "helper", replyToMessageId: "m1", text } });
        default:
          return parse({ kind: "delivery", idempotencyKey: key, body: { status: e.delivered ? "delivered" : "failed", proposalId: e.id, ...(e.delivered ? { externalMessageId: `x${i}` } : { reason: "gone" }) } });
      }
    });
  // Two shards for every draw, each draw its own conversation in them: one that wrote every
  // message's fold (as before 0034's release), one that writes only what comes back to a message.
  const whole = new DatabaseSync(":memory:");
  migrateShard(whole);
  whole.exec("UPDATE turn_rows SET sparse = 0");
  const sparse = new DatabaseSync(":memory:");
  migrateShard(sparse);
  let draws = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 14 }), async (drawn) => {
      const conversation = `api:fold-${++draws}`;
      const events = inputs(drawn);
      const key = conversationKey(`'${conversation}'`);
      for (const db of [whole, sparse]) {
        db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, ?)").run(conversation, AT);
        const { applied } = await insertEvents(d1Over(db), conversation, events.map((input, i) => ({ input, hash: eventHash(conversation, input), seq: i + 1 })), AT);
        expect(applied.every(Boolean)).toBe(true);
      }
      expect(sparse.prepare(placedTurns(key)).all()).toEqual(whole.prepare(`SELECT ${FOLD_COLUMNS} FROM turns WHERE conversation_key = ${key} ORDER BY role, message_id`).all());
      const view = { historyAgents: ["helper"], admitSensitive: false };
      expect(await searchTurns(d1Over(sparse), conversation, "alpha", view, 10)).toEqual(await searchTurns(d1Over(whole), conversation, "alpha", view, 10));
    }),
    { numRuns: 100 },
  );
  whole.close();
  sparse.close();
}, 120_000);
