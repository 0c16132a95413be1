import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { eventHash, eventInputSchema } from "../../src/core/events";
import type { SliceRange } from "../../src/core/turn-pages";
import { LogIndex, turnsAsOf } from "../../src/core/turn-pages";
import { D1Meter, meteredD1 } from "../../bench/worker/d1-meter";
import { readEventRange } from "../../src/storage/shard/events";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { readSliceLog } from "../../src/storage/shard/context-reads";
import { freshConversation, sourceEvent } from "./helpers";
import { placedShardOf } from "../support/shards";

/**
 * What the context path reads to check its head on every call (`readSliceLog`): the frozen slice's
 * range, and the events related to it that lie before it. The fold of the range over that read
 * must equal the fold over the whole log as it stood at the range's end, and no event may cross
 * from D1 twice, nor any event after the range (it cannot change that fold).
 */

/** A log of 160 events that ties its ranges to each other: replies to older messages, corrections before and long after their message, a reused message id, deliveries far from their proposal. */
function tangledLog(seed: number): unknown[] {
  const [steps] = fc.sample(fc.array(fc.tuple(fc.nat(99), fc.nat(1_000)), { minLength: 160, maxLength: 160 }), { seed, numRuns: 1 });
  const inputs: unknown[] = [];
  let messages = 0;
  let proposals = 0;
  for (const [i, [kind, pick]] of (steps ?? []).entries()) {
    const message = `m-${(pick % (messages + 3)) + 1}`; // sometimes one not said yet
    if (kind < 50 || messages === 0) inputs.push(sourceEvent(`s${i}`, kind === 0 && messages > 0 ? message : `m-${++messages}`, `said ${i}`));
    else if (kind < 65) inputs.push({ kind: "proposal", idempotencyKey: `p${i}`, body: { proposalId: `p-${++proposals}`, agentId: "helper", text: `reply ${i}`, replyToMessageId: message } });
    else if (kind < 80 && proposals > 0) inputs.push({ kind: "delivery", idempotencyKey: `d${i}`, body: { status: "delivered", proposalId: `p-${(pick % proposals) + 1}` } });
    else if (kind < 95) inputs.push({ kind: "correction", idempotencyKey: `c${i}`, body: { action: "edit", targetMessageId: message, text: `edited ${i}` } });
    else inputs.push({ kind: "correction", idempotencyKey: `x${i}`, body: { action: "delete", targetMessageId: message } });
  }
  return inputs;
}

/** A fresh conversation holding `inputs` as its log. */
async function written(inputs: readonly unknown[]) {
  const conversation = freshConversation();
  const db = await placedShardOf(conversation);
  const events = inputs.map((raw, i) => {
    const input = eventInputSchema.parse(raw);
    return { input, hash: eventHash(conversation, input), seq: i + 1 };
  });
  for (let i = 0; i < events.length; i += 100) await insertEvents(db, conversation, events.slice(i, i + 100), new Date().toISOString());
  return { conversation, db, events };
}

/** Rows D1 read for `readSliceLog` of one range. */
async function rowsRead(db: D1Database, conversation: string, range: SliceRange): Promise<number> {
  const meter = new D1Meter();
  meter.arm();
  await readSliceLog(meteredD1(db, meter), conversation, [range]);
  return meter.take().rowsRead;
}

describe("reading a frozen slice back", () => {
  it("folds each range as the whole log did at its end, each event read once, nothing after the range", async () => {
    const { conversation, db, events } = await written(tangledLog(23));
    const whole = new LogIndex(await readEventRange(db, conversation, 0, events.length));
    const policy = { admittedAgents: new Set(["helper"]), includeSensitive: true };

    const ranges = fc.sample(
      fc
        .tuple(fc.integer({ min: 0, max: 150 }), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 60 }))
        .map(([after, length, groups]) => ({ after, groupsThrough: after + Math.min(groups, length), through: Math.min(events.length, after + length) })),
      { seed: 5, numRuns: 40 },
    );
    let before = 0;
    let skipped = 0;
    for (const range of ranges) {
      const meter = new D1Meter();
      const returned: number[] = [];
      meter.onResult = (result) => returned.push(...(result.results as { seq?: number }[]).flatMap((row) => (row.seq === undefined ? [] : [row.seq])));
      meter.arm();
      const log = await readSliceLog(meteredD1(db, meter), conversation, [range]);
      meter.take();
      const label = JSON.stringify(range);
      // Exactly what the in-memory mirror reads, whose fold the core's property tests hold to the whole log's.
      expect(log, label).toEqual(whole.slice(range));
      expect(turnsAsOf(new LogIndex(log), policy, range.after, range.through, range.groupsThrough), label).toEqual(
        turnsAsOf(whole, policy, range.after, range.through, range.groupsThrough),
      );
      expect(returned.length, label).toBe(new Set(returned).size);
      expect(returned.filter((seq) => seq > range.through), label).toEqual([]);
      before += returned.filter((seq) => seq <= range.after).length;
      if (log.filter((event) => event.seq > range.after).length < range.through - range.after) skipped += 1;
    }
    // The log ties ranges to what came before them: the check is not vacuous.
    expect(before).toBeGreaterThan(10);
    expect(skipped).toBeGreaterThan(10);
  });

  it("costs the slice's groups, not the log appended after them before the compactor froze it", async () => {
    const tangled = tangledLog(31);
    // The same log, then 1,500 messages that name nothing of it, all before the trigger.
    const appended = Array.from({ length: 1_500 }, (_, i) => sourceEvent(`new${i}`, `later-${i}`, `afterwards ${i}`));
    const { conversation, db } = await written([...tangled, ...appended]);
    const slice = { after: 120, groupsThrough: 150 };
    const short = await rowsRead(db, conversation, { ...slice, through: 160 });
    const long = await rowsRead(db, conversation, { ...slice, through: 160 + appended.length });
    expect(short).toBeGreaterThan(0);
    // Reading on to the trigger read every appended message: 15,301 rows against 301 before the
    // window stopped at the next group; 280 against 250 when written.
    expect(long).toBeLessThan(short + 100);
  });

  it("costs what the slice names, not the history before it", async () => {
    const tangled = tangledLog(29);
    const alone = await written(tangled);
    // The same log after 1,500 events that name nothing of it.
    const unrelated = Array.from({ length: 1_500 }, (_, i) => sourceEvent(`old${i}`, `old-${i}`, `long ago ${i}`));
    const late = await written([...unrelated, ...tangled]);
    const range = { after: 120, groupsThrough: 160, through: 160 };
    const shifted = { after: range.after + unrelated.length, groupsThrough: range.groupsThrough + unrelated.length, through: range.through + unrelated.length };
    const [short, long] = [await rowsRead(alone.db, alone.conversation, range), await rowsRead(late.db, late.conversation, shifted)];
    expect(short).toBeGreaterThan(0);
    // A read that scanned the history before the range would read its 1,500 events (it did, 8,324
    // rows against 827, when the bounds could be served from the primary key); a probe may differ by a row.
    expect(long).toBeLessThan(short + 100);
  });
});
