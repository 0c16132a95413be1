// §2: D1 round trips, statements, rows read and written per append, counted by the Worker's D1
// meter (`D1_METER = "on"`) in the Worker and the conversation's object, below the trigger.
import { Api } from "../lib/api.mjs";
import { GROUPS_PER_BATCH } from "../lib/scenario.mjs";
import { max, mean, round } from "../lib/stats.mjs";

/**
 * @param {{ api: Api, size: Record<string, number>, log: (line: string) => void } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function measureD1PerAppend({ api, size, log, agents, streams, followers }) {
  const a = agents.meter;
  const path = `${Api.conversationPath(a.conversation)}/events`;
  // Warm: the object, its chain (activated on the first source) and the declarations are loaded.
  for (let i = 0; i < 3; i++) for (const event of streams.meter.next().events) await api.appendOne(a.conversation, event);
  /** @type {Record<string, Array<Record<string, number>>>} */
  const samples = { source: [], proposal: [], delivery: [], correction: [] };
  for (let i = 0; i < size.meteredAppends; i++) {
    const group = streams.meter.next();
    for (const event of group.events) samples[/** @type {"source" | "proposal" | "delivery"} */ (event.kind)].push((await api.metered("append", [201], "POST", path, event)).d1);
    const source = /** @type {{ body: { messageId: string } }} */ (group.events[0]);
    const correction = { kind: "correction", idempotencyKey: `c-${source.body.messageId}`, body: { action: "edit", targetMessageId: source.body.messageId, text: `${group.question} (edited)` } };
    samples.correction.push((await api.metered("correction", [201], "POST", path, correction)).d1);
  }
  const groups = Array.from({ length: GROUPS_PER_BATCH }, () => streams.meter.next());
  const batch = (await api.metered("batch append", [201], "POST", `${path}/batch`, { events: groups.flatMap((g) => g.events) })).d1;
  const summarize = (/** @type {Array<Record<string, number>>} */ list) => ({
    n: list.length,
    roundTrips: round(mean(list.map((d) => d.roundTrips)), 2),
    roundTripsMax: max(list.map((d) => d.roundTrips)),
    statements: round(mean(list.map((d) => d.statements)), 2),
    rowsRead: round(mean(list.map((d) => d.rowsRead)), 1),
    rowsWritten: round(mean(list.map((d) => d.rowsWritten)), 1),
  });
  // The premise: every sample is below the trigger (no plan, no packet, no queue send).
  await followers.meter.poll();
  const planned = followers.meter.plannedRuns().length;
  const metric = {
    measured: true,
    perKind: Object.fromEntries(Object.entries(samples).map(([kind, list]) => [kind, summarize(list)])),
    batch: { events: groups.length * 3, sources: groups.length, ...summarize([batch]) },
    plannedRuns: planned,
  };
  const s = metric.perKind.source;
  log(`[2 D1 per append] source: ${s.roundTrips} round trips, ${s.statements} statements, ${s.rowsRead} rows read, ${s.rowsWritten} rows written (mean of ${s.n}); batch of ${groups.length * 3}: ${batch.roundTrips} round trips`);
  return metric;
}
