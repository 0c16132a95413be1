import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { placedShardOf } from "../support/shards";

/**
 * The turn index's triggers keep `turn_fts` equal to its definition, the `turn_search_rows` view,
 * after every change the log can make; and a change re-indexes the turns around it only when it
 * changes what they lend (migration 0022). Changes go in through `turn_feed`, the view the log's
 * own trigger feeds, on a real shard.
 */

interface Row {
  rowid: number;
  scope: string | null;
  author: string;
  text: string;
  grams: string;
  context: string;
}

let conversations = 0;

async function conversation(): Promise<{ id: string; db: D1Database; feed: (kind: string, body: object, sensitive?: number) => Promise<void> }> {
  const id = `upkeep-${Date.now().toString(36)}-${++conversations}`;
  const db = await placedShardOf(id);
  await db.prepare("INSERT OR IGNORE INTO conversations (id, created_at) VALUES (?, ?)").bind(id, new Date(0).toISOString()).run();
  let seq = 0;
  const feed = async (kind: string, body: object, sensitive = 0): Promise<void> => {
    seq += 1;
    await db.prepare("INSERT INTO turn_feed (conversation_id, seq, kind, sensitive, body) VALUES (?, ?, ?, ?, ?)").bind(id, seq, kind, sensitive, JSON.stringify(body)).run();
  };
  return { id, db, feed };
}

const COLUMNS = "scope, author, text, grams, context";

async function indexed(db: D1Database, id: string): Promise<Row[]> {
  const sql = `SELECT f.rowid AS rowid, ${COLUMNS} FROM turn_fts f JOIN turn_index t ON t.id = f.rowid WHERE t.conversation_id = ? ORDER BY f.rowid`;
  return (await db.prepare(sql).bind(id).all<Row>()).results;
}

async function defined(db: D1Database, id: string): Promise<Row[]> {
  const sql = `SELECT r.id AS rowid, ${COLUMNS} FROM turn_search_rows r JOIN turn_index t ON t.id = r.id WHERE t.conversation_id = ? ORDER BY r.id`;
  return (await db.prepare(sql).bind(id).all<Row>()).results;
}

const source = (m: string, text: string, name = "Ann") => ["source", { messageId: m, author: { id: `u-${name}`, name }, text }] as const;
const edit = (m: string, text: string, second: number) => ["correction", { action: "edit", targetMessageId: m, text, editedAt: `2026-01-01T00:00:${String(second).padStart(2, "0")}Z` }] as const;
const remove = (m: string) => ["correction", { action: "delete", targetMessageId: m }] as const;
const proposal = (p: string, text: string) => ["proposal", { proposalId: p, agentId: "host", text }] as const;
const delivery = (p: string) => ["delivery", { proposalId: p, status: "delivered" }] as const;

const word = fc.constantFrom("venue", "harbour", "северный", "vela", "北京天气", "غذای", "budget", "Zürich");
const messageId = fc.integer({ min: 0, max: 9 }).map((n) => `m${n}`);
const proposalId = fc.integer({ min: 0, max: 2 }).map((n) => `p${n}`);
const second = fc.integer({ min: 10, max: 59 });
/** One change the log can make, weighted towards new messages so that turns have neighbours. */
const change = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(messageId, word, word, fc.constantFrom("Ann", "Bob")).map(([m, a, b, name]) => source(m, `${a} ${b}`, name)) },
  { weight: 1, arbitrary: fc.tuple(messageId, word, second).map(([m, text, at]) => edit(m, text, at)) },
  { weight: 1, arbitrary: fc.tuple(messageId, second).map(([m, at]) => edit(m, "kept as it was", at)) },
  { weight: 1, arbitrary: messageId.map(remove) },
  { weight: 1, arbitrary: fc.tuple(proposalId, word).map(([p, text]) => proposal(p, `noted: ${text}`)) },
  { weight: 1, arbitrary: proposalId.map(delivery) },
);
const step = fc.record({ change, sensitive: fc.constantFrom(0, 0, 0, 0, 0, 0, 1) });

/** Forty changes drawn with a fixed seed, so a failure names the step that broke. */
const steps = (seed: number): { change: readonly [string, object]; sensitive: number }[] =>
  fc.sample(fc.array(step, { minLength: 40, maxLength: 40 }), { seed, numRuns: 1 })[0] ?? [];

describe("the turn index's upkeep", () => {
  it("holds exactly its definition after every change: sources, edits before and after their message, edits that keep the text, deletions, sensitive turns, replies and deliveries", async () => {
    for (const seed of [1, 7, 23]) {
      const { id, db, feed } = await conversation();
      for (const [n, { change, sensitive }] of steps(seed).entries()) {
        await feed(change[0], change[1], sensitive);
        expect(await indexed(db, id), `seed ${seed}, step ${n}: ${JSON.stringify(change)}`).toEqual(await defined(db, id));
      }
      // The sequence reached the cases it is for: turns indexed, some lending to others.
      expect((await indexed(db, id)).filter((row) => row.context !== "").length).toBeGreaterThan(2);
    }
  });

  /** Marks the context of every indexed turn of the conversation, so a turn re-indexed since shows it. */
  async function mark(db: D1Database, id: string): Promise<void> {
    await db.prepare("UPDATE turn_fts SET context = 'stale' WHERE rowid IN (SELECT id FROM turn_index WHERE conversation_id = ?)").bind(id).run();
  }

  async function reindexed(db: D1Database, id: string): Promise<string[]> {
    const sql = "SELECT t.message_id AS id FROM turn_fts f JOIN turn_index t ON t.id = f.rowid WHERE t.conversation_id = ? AND f.context <> 'stale' ORDER BY t.seq";
    return (await db.prepare(sql).bind(id).all<{ id: string }>()).results.map((r) => r.id);
  }

  it("re-indexes the turns around a change only when the change alters what they lend", async () => {
    const { id, db, feed } = await conversation();
    for (const n of [1, 2, 3, 4]) await feed(...source(`m${n}`, `line ${n} about the venue`));
    await feed(...proposal("p1", "Noted."));
    await feed(...delivery("p1"));

    // A reply lends nothing (and is indexed once delivered), nor does an edit that keeps the text.
    await mark(db, id);
    await feed(...proposal("p2", "Noted again."));
    expect(await reindexed(db, id)).toEqual([]);
    await feed(...delivery("p2"));
    expect(await reindexed(db, id)).toEqual(["p2"]);
    await mark(db, id);
    await feed(...edit("m3", "line 3 about the venue", 30));
    expect(await reindexed(db, id)).toEqual(["m3"]);

    // A new text, a new message, a deletion: the turns within two places of it lend from it anew.
    await mark(db, id);
    await feed(...edit("m3", "line 3 about the harbour", 31));
    expect(await reindexed(db, id)).toEqual(["m1", "m2", "m3", "m4", "p1"]);
    await mark(db, id);
    await feed(...source("m5", "the harbour instead"));
    expect(await reindexed(db, id)).toEqual(["p1", "p2", "m5"]);
    await mark(db, id);
    await feed(...remove("m4"));
    expect(await reindexed(db, id)).toEqual(["m2", "m3", "p1", "p2"]);
  });
});
