import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ModelEvidence } from "../../src/core/boundary";
import type { CompactionContent } from "../../src/core/packet";
import { OUTPUT_CONTRACT } from "../../src/core/packet";
import { conversationStub } from "../../src/durable/stub";
import { mapDatabases } from "../../bench/worker/databases";
import { register } from "../support/declarations";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";
import type { D1Call, Verdict } from "./seams-faults";
import { CONNECTION_LOST, changeObjectEnv, faultyD1, mentions } from "./seams-faults";

/**
 * A storage call that fails while a compaction settles leaves the conversation's object either as
 * it was (the retry settles afresh) or reloaded from D1, never half-applied: after the retry the
 * chain serves the boundary D1 holds, and a plan whose write lost its answer is the chain's one
 * open plan. The object settles through its own RPC (as the queue consumer calls it), and its jobs
 * go to a recorder instead of the queue, so nothing but the test runs a compaction here.
 */

const CONTENT: CompactionContent = {
  contract: OUTPUT_CONTRACT,
  mode: "projection",
  summary: "The team compared Lisbon and Porto for the offsite; Ada wants cheap flights and a garden.",
  preview: "The team compared Lisbon and Porto for the offsite.",
  salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] },
  degraded: false,
};
const MODEL: ModelEvidence = { provider: "foldline-extractive", model: "foldline-extractive-1", responseId: null, finishReason: "stop", usage: null, latencyMs: 1 };

const boundaryOf = (runId: string): string => `bnd_${runId.replace(/^cmp_/, "")}`;
const text = (i: number): string => `Message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + i} euros and a garden.`;

/** One fault, armed by the test: the `nth` call (from when it is armed) that `matches` accepts fails `when` it says. */
function fault(matches: (call: D1Call) => boolean, when: "before" | "after", nth = 1) {
  let seen = 0;
  const rule = (call: D1Call): Verdict => {
    if (!rule.armed || !matches(call) || ++seen !== nth) return undefined;
    rule.fired += 1;
    return { when, error: () => new Error(CONNECTION_LOST) };
  };
  rule.armed = false;
  rule.fired = 0;
  return rule;
}

/**
 * A conversation whose object has a faulty shard (`judge`) and whose jobs are kept, not queued; an
 * agent with a small policy; and its first plan open, with `extra` sources said after it.
 */
async function planned(judge: (call: D1Call) => Verdict, extra: number) {
  const conversation = freshConversation("api:seams-settle");
  const agentId = `seams-settle-${crypto.randomUUID().slice(0, 8)}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, admitSensitive: true })).status).toBe(201);
  const sent: unknown[] = [];
  const recorder = {
    send: async (body: unknown) => void sent.push(body),
    sendBatch: async (messages: Iterable<{ body: unknown }>) => void sent.push(...[...messages].map((m) => m.body)),
  } as unknown as Env["JOB_QUEUE"];
  await changeObjectEnv(conversation, (objectEnv) => ({ ...mapDatabases(objectEnv, (db, name) => (name === "DB" ? db : faultyD1(db, judge))), JOB_QUEUE: recorder }));
  const stub = conversationStub(env, conversation);
  let said = 0;
  const say = async () => {
    const i = said++;
    const res = await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, text(i)) });
    expect(res.status, await res.clone().text()).toBe(201);
  };
  let runId: string | null | undefined;
  while (typeof runId !== "string" && said < 40) {
    await say();
    runId = (await stub.describeChain(conversation, agentId))?.openRunId;
  }
  if (typeof runId !== "string") throw new Error("no plan after 40 messages");
  for (let i = 0; i < extra; i++) await say();
  return { conversation, agentId, token, stub, runId, say };
}

/** Runs without a boundary in D1: the chain's open plans. */
async function openPlans(conversation: string): Promise<string[]> {
  const { results } = await (await shardOf(conversation))
    .prepare("SELECT run_id FROM compaction_plans p WHERE conversation_id = ? AND NOT EXISTS (SELECT 1 FROM boundaries b WHERE b.run_id = p.run_id) ORDER BY created_at")
    .bind(conversation)
    .all<{ run_id: string }>();
  return results.map((r) => r.run_id);
}

async function storedBoundary(conversation: string, runId: string): Promise<{ id: string; hash: string } | null> {
  return (await shardOf(conversation)).prepare("SELECT id, hash FROM boundaries WHERE run_id = ?").bind(runId).first<{ id: string; hash: string }>();
}

/** The context the agent is served, and the boundary it names. */
async function served(token: string, conversation: string, agentId: string) {
  const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${agentId}`, { token });
  const body = await res.clone().text();
  return { status: res.status, body, boundaryId: res.status === 200 ? (await json<{ manifest: { boundary: { id: string } | null } }>(res)).manifest.boundary?.id : undefined };
}

/** The run's packet as the queue consumer reads it (and hands it to the settlement). */
async function packetText(conversation: string, runId: string): Promise<string> {
  const plan = await (await shardOf(conversation)).prepare("SELECT packet_key FROM compaction_plans WHERE run_id = ?").bind(runId).first<{ packet_key: string }>();
  const text = plan === null ? undefined : await (await env.DOCUMENTS.get(plan.packet_key))?.text();
  if (text === undefined) throw new Error(`no packet for ${runId}`);
  return text;
}

/** Settles once, as a delivery whose fault may reject it, then again as the queue's redelivery would. */
async function settleWithRetry(stub: ReturnType<typeof conversationStub>, conversation: string, runId: string) {
  const packet = await packetText(conversation, runId);
  const first = await stub.settle(conversation, runId, CONTENT, MODEL, packet).catch((error: unknown) => ({ ok: false as const, thrown: String(error) }));
  const retried = await stub.settle(conversation, runId, CONTENT, MODEL, packet);
  return { first, retried };
}

const settleBatch = (c: D1Call): boolean => c.method === "batch" && mentions(c, "INSERT INTO boundaries");
const boundaryByRun = (c: D1Call): boolean => c.method === "first" && mentions(c, "FROM boundaries WHERE run_id = ?");
const planBatch = (c: D1Call): boolean => c.method === "batch" && mentions(c, "INSERT INTO compaction_plans");

describe("a storage fault while a compaction settles", () => {
  it("the settle batch commits and its answer is lost: the retry returns the same boundary, and the context serves it", async () => {
    const rule = fault(settleBatch, "after");
    const { conversation, agentId, token, stub, runId } = await planned(rule, 0);
    rule.armed = true;
    const { first, retried } = await settleWithRetry(stub, conversation, runId);
    expect(rule.fired).toBe(1);
    const stored = await storedBoundary(conversation, runId);
    expect(stored?.id).toBe(boundaryOf(runId));
    expect(retried.ok && { id: retried.value.body.id, hash: retried.value.hash }).toEqual(stored);

    const context = await served(token, conversation, agentId);
    expect(context.status, context.body).toBe(200);
    expect(context.boundaryId, context.body).toBe(boundaryOf(runId));
    expect((await stub.describeChain(conversation, agentId))?.headId).toBe(boundaryOf(runId));
    // A write that was kept is not reported as failed: D1 told the first attempt it was there.
    expect(first).toMatchObject({ ok: true, value: { hash: stored?.hash } });
  });

  it("the settle batch commits, its answer is lost, and the read asking D1 whether it is there fails too: the chain is read from D1 again, and the retry returns the boundary", async () => {
    // The settle reads its run's boundary first (none yet), then again once the batch's answer is lost.
    const lost = fault(settleBatch, "after");
    const unread = fault(boundaryByRun, "before", 2);
    const { conversation, agentId, token, stub, runId } = await planned((c) => lost(c) ?? unread(c), 0);
    lost.armed = true;
    unread.armed = true;
    const { first, retried } = await settleWithRetry(stub, conversation, runId);
    expect([lost.fired, unread.fired]).toEqual([1, 1]);
    const stored = await storedBoundary(conversation, runId);
    expect(retried.ok && retried.value.hash).toBe(stored?.hash);

    const context = await served(token, conversation, agentId);
    expect(context.status, context.body).toBe(200);
    expect(context.boundaryId, context.body).toBe(boundaryOf(runId));
    expect((await stub.describeChain(conversation, agentId))?.headId).toBe(boundaryOf(runId));
    // Neither the write nor its absence could be told: the attempt failed, and the retry found the boundary stored.
    expect(first).toMatchObject({ ok: false, thrown: expect.stringContaining("Network connection lost") });
  });

  it("the next plan's write after settling commits and its answer is lost: the chain keeps one open plan, the one D1 holds", async () => {
    const rule = fault(planBatch, "after");
    // Enough said after the first plan that settling it calls for the next one at once.
    const { conversation, agentId, token, stub, runId, say } = await planned(rule, 16);
    rule.armed = true;
    const { retried } = await settleWithRetry(stub, conversation, runId);
    expect(rule.fired).toBe(1);
    expect(retried.ok).toBe(true);
    const [next, ...more] = await openPlans(conversation);
    expect(more).toEqual([]);
    expect(next).toBeDefined();

    // The next source (which is over the trigger) and the catch-up find the plan open and open no other.
    await say();
    expect(await openPlans(conversation)).toEqual([next]);
    expect((await stub.describeChain(conversation, agentId))?.openRunId).toBe(next);
    const context = await served(token, conversation, agentId);
    expect(context.status, context.body).toBe(200);
    expect(context.boundaryId, context.body).toBe(boundaryOf(runId));
  });
});
