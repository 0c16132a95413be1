import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { RunsSection } from "../../src/http/inspector/views/runs-section";
import { D1Meter, meteredD1 } from "../../bench/worker/d1-meter";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { readPreflightSizes } from "../../src/storage/shard/context-sizes";
import { countRunsByStatus, INSPECTED_EVENTS } from "../../src/storage/shard/events";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { placedShardOf } from "../support/shards";
import { freshConversation, sourceEvent } from "./helpers";

/**
 * The inspector's summaries of a log (runs by status, a compactor's preflight sizes) read its newest
 * `INSPECTED_EVENTS` events, not all of it: a conversation of a million events would read every row
 * on each view.
 */

/** A fresh conversation of `sources` messages, each with a run after it: completed for every tenth, else failed. */
async function logOfRuns(sources: number) {
  const conversation = freshConversation("api:runs");
  const db = await placedShardOf(conversation);
  const inputs = Array.from({ length: sources }, (_, i) => [
    sourceEvent(`s${i}`, `m-${i}`, `message ${i}`),
    { kind: "run", idempotencyKey: `r${i}`, body: { runId: `run-${i}`, agentId: "helper", role: "agent", status: i % 10 === 0 ? "completed" : "failed" } },
  ]).flat();
  const events = inputs.map((raw, i) => {
    const input = eventInputSchema.parse(raw);
    return { input, hash: eventHash(conversation, input), seq: i + 1 };
  });
  for (let i = 0; i < events.length; i += 100) await insertEvents(db, conversation, events.slice(i, i + 100), new Date().toISOString());
  return { conversation, db };
}

async function counted(sources: number, window?: number) {
  const { conversation, db } = await logOfRuns(sources);
  const meter = new D1Meter();
  meter.arm();
  const counts = await countRunsByStatus(meteredD1(db, meter), conversation, window);
  return { counts, rowsRead: meter.take().rowsRead };
}

describe("the inspector's run counts", () => {
  it("count every run of a log no longer than the window, and say so", async () => {
    expect(INSPECTED_EVENTS).toBe(10_000);
    const { counts } = await counted(300);
    expect(counts).toEqual({ byStatus: new Map([["completed", 30], ["failed", 270]]), afterSeq: 0 });
    expect((await counted(100, 200)).counts).toEqual({ byStatus: new Map([["completed", 10], ["failed", 90]]), afterSeq: 0 });
  });

  it("count the runs of the newest events of a longer log, saying from where, at the window's cost", { timeout: 120_000 }, async () => {
    const short = await counted(100, 200);
    const long = await counted(1_500, 200);
    // The newest 200 events of 3,000: the runs of the newest 100 messages (seq 2,801 on).
    expect(long.counts).toEqual({ byStatus: new Map([["completed", 10], ["failed", 90]]), afterSeq: 2_800 });
    // Counting every run read each of the log's rows: 4,500 against 300.
    expect(long.rowsRead, `${short.rowsRead} rows read to count 200 events' runs, ${long.rowsRead} for the newest 200 of 3,000`).toBeLessThan(short.rowsRead + 20);
  });

  it("are shown with where they start when they are of the newest events only", async () => {
    const section = (countedAfterSeq: number) =>
      String(jsx(RunsSection, { runs: { items: [], nextBefore: null, counts: new Map([["failed", 90]]), countedAfterSeq, spans: new Map() }, newestHref: undefined, olderHref: undefined }).toString());
    expect(await section(2_800)).toContain("counted in the newest events only: after seq 2800");
    expect(await section(0)).not.toContain("counted in the newest events only");
  });

  it("read a compactor's preflight sizes among the newest events, even when it has none there", async () => {
    const rowsRead = async (sources: number) => {
      const { conversation, db } = await logOfRuns(sources);
      const meter = new D1Meter();
      meter.arm();
      // A compactor whose runs are nowhere in the log: the walk finds no `limit` to stop at.
      expect(await readPreflightSizes(meteredD1(db, meter), conversation, "gone.compactor", 10, 200)).toEqual([]);
      return meter.take().rowsRead;
    };
    const short = await rowsRead(100);
    const long = await rowsRead(1_500);
    // Walking back until `limit` matched read the whole log: 3,001 rows against 200.
    expect(long, `${short} rows read for the newest 200 events of 200, ${long} of 3,000`).toBeLessThan(short + 20);
  });
});
