import { env } from "cloudflare:workers";
import { afterAll, describe, expect, it } from "vitest";
import type { MetricPoint } from "../../src/core/metric-point";
import { attachMetrics } from "../../src/logger";
import { settledChain, waitFor } from "../support/chain";
import { register } from "../support/declarations";
import { call, eventsPath, freshConversation, tokenFor } from "./helpers";

/**
 * Numbers over time (Workers Analytics Engine, binding `METRICS`): the Worker, its object and its
 * queue consumer run in the test's isolate, so a test double of the dataset attached here receives
 * every point they write. Points say ids, codes and numbers, never what was said.
 */

const points: MetricPoint[] = [];
attachMetrics({ ...env, METRICS: { writeDataPoint: (point: MetricPoint) => points.push(point) } } as unknown as Env);

afterAll(() => {
  // Later files in this isolate are not charted.
  attachMetrics({ ...env, METRICS: { writeDataPoint: () => undefined } } as unknown as Env);
});

const MARKER = `Wombat${crypto.randomUUID().replaceAll("-", "")}`;

describe("METRICS data points", () => {
  it("charts appends, a compaction's job and settlement, and a recall, with the fields an operator groups by", { timeout: 120_000 }, async () => {
    const conversation = freshConversation("api:metrics");
    const agentId = `metrics-${Date.now().toString(36)}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, admitSensitive: true })).status).toBe(201);
    const message = (i: number) => ({ kind: "source", idempotencyKey: `k-${i}`, body: { messageId: `m-${i}`, author: { id: "u1", name: `Ada ${MARKER}` }, text: `Message ${i}: the offsite budget is ${1000 + i} euros, ${MARKER}.` } });
    for (let i = 0; i < 24; i++) expect((await call("POST", eventsPath(conversation), { token, body: message(i) })).status).toBe(201);
    await settledChain(conversation, agentId, 1);
    expect((await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${agentId}&query=${encodeURIComponent("offsite budget")}`, { token })).status).toBe(200);

    const mine = () => points.filter((p) => p.blobs[5] === conversation);
    await waitFor(async () => (mine().some((p) => p.blobs[0] === "settlement") ? true : undefined), "a settlement point");
    const appends = mine().filter((p) => p.blobs[0] === "append");
    expect(appends).toHaveLength(24);
    expect(appends.every((p) => p.blobs[2] === "ok" && p.doubles[5] === 1 && p.indexes[0] === conversation)).toBe(true);
    const start = mine().find((p) => p.blobs[0] === "job_start" && p.blobs[4] === "compaction");
    expect(start?.indexes).toEqual([agentId]);
    const job = mine().find((p) => p.blobs[0] === "job" && p.blobs[4] === "compaction" && p.blobs[2] === "done");
    expect(job?.blobs[1]).toBe(agentId);
    expect(mine().find((p) => p.blobs[0] === "settlement")?.blobs.slice(1, 3)).toEqual([agentId, "settled"]);
    // The boundary is served (the agent admits sensitive history), so the turns it covers are recalled.
    const recall = mine().find((p) => p.blobs[0] === "recall");
    expect(recall?.doubles[5]).toBeGreaterThan(0);
    expect(JSON.stringify(points)).not.toContain(MARKER);
  });
});
