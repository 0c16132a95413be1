import { describe, expect, it } from "vitest";
import { register } from "../support/declarations";
import { shardOf } from "../support/shards";
import { countRunsByStatus } from "../../src/storage/shard/events";
import { call, eventsPath, freshConversation, sourceEvent, tokenFor } from "./helpers";

/**
 * A batch append's cost in D1 queries does not grow with the compactors that serve the conversation:
 * each of its sources is preflighted for each compactor and the skipped runs written, and all of them
 * together are a few statements, not one per run (the limits are enforced: test/limits-check.ts).
 */
describe("a batch append with many compactors", () => {
  it("appends 100 sources in a conversation ten agents serve, every skipped run written, within one invocation's D1 queries", { timeout: 120_000 }, async () => {
    const conversation = freshConversation("api:many");
    const agents = Array.from({ length: 10 }, (_, i) => `many-${i}-${crypto.randomUUID().slice(0, 6)}`);
    const token = await tokenFor(conversation, ...agents.map((a) => `agent:${a}`));
    for (const agentId of agents) expect((await register(token, { agentId, sources: [conversation], trigger: 2_000_000, retain: 1_000_000 })).status).toBe(201);
    // One source first: every chain is activated and held by the object.
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("s-0", "0", "hello everyone") })).status).toBe(201);
    const batch = Array.from({ length: 100 }, (_, i) => sourceEvent(`b-${i}`, `b${i}`, `message ${i} of the batch`));
    const appended = await call("POST", eventsPath(conversation, "/batch"), { token, body: { events: batch } });
    expect(appended.status, await appended.clone().text()).toBe(201);
    const runs = await countRunsByStatus(await shardOf(conversation), conversation);
    expect(runs.byStatus.get("skipped")).toBe(101 * agents.length);
  });
});
