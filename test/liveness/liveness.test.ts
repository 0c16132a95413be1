import { createExecutionContext, createMessageBatch, getQueueResult, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { conversationStub } from "../../src/durable/stub";
import worker from "../../src/index";
import type { CompactionJob } from "../../src/core/jobs";
import { readIncidents } from "../support/reads";
import { register } from "../support/declarations";
import { waitFor } from "../support/chain";
import type { ChainHealth } from "../../src/api/chain";
import { conversationPath } from "../../src/http/inspector/paths";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "../integration/helpers";

/**
 * Compaction stays live with nothing arriving: in this project (vitest.config.ts) the watchdog is
 * 1 s, the stall threshold 3 s and the backoff base 1 s, and no consumer reads the compaction
 * queue, so every job the object sends is lost exactly as one lost in a crash. The tests drive the
 * consumer themselves with `createMessageBatch`, and otherwise only wait (with deadlines) for the
 * object's own alarms: nothing else is allowed to move the chain.
 */

let counter = 0;

async function setup() {
  const conversation = freshConversation("api:live");
  const agentId = `live-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
  return { conversation, agentId, token, stub: conversationStub(env, conversation) };
}

let said = 0;
async function say(token: string, conversation: string): Promise<void> {
  const i = said++;
  const text = `Message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + (i % 50)} euros and a garden.`;
  expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, text) })).status).toBe(201);
}

/** An inspector page as a signed-in browser gets it. */
async function inspectorPage(token: string, path: string): Promise<string> {
  const origin = "http://foldline.test";
  const login = await exports.default.fetch(
    new Request(`${origin}/inspector/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin, "sec-fetch-site": "same-origin" },
      body: new URLSearchParams({ token }).toString(),
    }),
  );
  const cookie = login.headers.get("set-cookie")?.split(";")[0] ?? "";
  const page = await exports.default.fetch(new Request(`${origin}${path}`, { headers: { cookie } }));
  expect(page.status).toBe(200);
  return page.text();
}

/** Messages until a plan opens; its run id. */
async function sayUntilPlanned(token: string, conversation: string, agentId: string): Promise<string> {
  const stub = conversationStub(env, conversation);
  for (let i = 0; i < 40; i++) {
    await say(token, conversation);
    const open = (await stub.describeChain(conversation, agentId))?.openRunId;
    if (typeof open === "string") return open;
  }
  throw new Error("no plan after 40 messages");
}

/** The job the object sent for a plan, rebuilt from the plan row (the packet it names is the plan's). */
async function jobFor(conversation: string, agentId: string, runId: string): Promise<CompactionJob> {
  const plan = await env.DB.prepare("SELECT packet_key, packet_hash FROM compaction_plans WHERE run_id = ?").bind(runId).first<{ packet_key: string; packet_hash: string }>();
  if (plan === null) throw new Error(`no plan ${runId}`);
  return { type: "compaction", conversationId: conversation, agentId, runId, packetKey: plan.packet_key, packetHash: plan.packet_hash, model: "test-model", profile: "default" };
}

async function consume(queue: string, jobs: readonly CompactionJob[]) {
  const batch = createMessageBatch(queue, jobs.map((body, i) => ({ id: `msg-${i}`, timestamp: new Date(), attempts: 1, body })));
  const ctx = createExecutionContext();
  await worker.queue(batch, env);
  return getQueueResult(batch, ctx);
}

describe("compaction stays live without new messages", () => {
  it("re-sends the vanished job of a back-to-back plan from its own watchdog, pages once it stalls, and settles when the job runs", async () => {
    const { conversation, agentId, token, stub } = await setup();
    const first = await sayUntilPlanned(token, conversation, agentId);
    // Enough behind the first plan that its settle plans the next one at once (back to back).
    for (let i = 0; i < 15; i++) await say(token, conversation);
    expect((await consume("foldline-compaction", [await jobFor(conversation, agentId, first)])).explicitAcks).toEqual(["msg-0"]);
    const afterFirst = await stub.describeChain(conversation, agentId);
    const second = afterFirst?.openRunId ?? "";
    expect(afterFirst?.headId).toBe(`bnd_${first.replace(/^cmp_/, "")}`);
    expect(second).not.toBe("");
    expect(second).not.toBe(first);

    // The second plan's job vanished and nothing new arrives: only the object's own deadlines act.
    const stalled = await waitFor(async () => {
      const incidents = await readIncidents(env.DB, conversation, 50);
      return incidents.find((i) => i.kind === "compaction_stalled" && i.runId === second);
    }, "a compaction_stalled incident for the second plan", 20_000);
    expect(stalled.code).toBe("plan_stalled");
    const state = await stub.describeChain(conversation, agentId);
    expect(state?.openRunId).toBe(second);
    expect(state?.openPlan?.dispatches).toBeGreaterThanOrEqual(2);
    expect(state?.openPlan?.nextWakeAt).toBeGreaterThan(Date.now() - 1_000);
    // The operator sees it: the listing's health and the inspector name the plan, its age, re-sends and the page.
    const listing = await json<{ health: ChainHealth }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/chain?agent=${agentId}`, { token }));
    expect(listing.health.openPlan).toMatchObject({ runId: second, failedAttempts: 0 });
    expect(listing.health.openPlan?.ageSeconds).toBeGreaterThanOrEqual(3);
    expect(listing.health.openPlan?.dispatches).toBeGreaterThanOrEqual(2);
    expect(Date.parse(listing.health.openPlan?.nextWakeAt ?? "")).toBeGreaterThan(Date.now() - 2_000);
    expect(listing.health.lastFailure).toMatchObject({ kind: "compaction_stalled", code: "plan_stalled", runId: second });
    const page = await inspectorPage(token, conversationPath(conversation, { agent: agentId }));
    expect(page).toMatch(/data-testid="chain-health" data-state="in-flight"/);
    expect(page).toContain(`data-run-id="${second}"`);
    expect(page).toMatch(/data-testid="last-failure" data-kind="compaction_stalled"/);

    // One page per plan, however many times its job was sent again.
    await waitFor(async () => ((await stub.describeChain(conversation, agentId))?.openPlan?.dispatches ?? 0) >= 4 || undefined, "two more re-sends", 20_000);
    expect((await readIncidents(env.DB, conversation, 50)).filter((i) => i.kind === "compaction_stalled")).toHaveLength(1);

    // The job (the same plan, the same packet) runs: the chain settles with no message needed.
    await consume("foldline-compaction", [await jobFor(conversation, agentId, second)]);
    const settled = await stub.describeChain(conversation, agentId);
    expect(settled?.headId).toBe(`bnd_${second.replace(/^cmp_/, "")}`);
    expect(settled?.openRunId).toBeNull();
    expect(settled?.openPlan).toBeNull();
  }, 60_000);

  it("re-plans after a dead-letter from its own backoff deadline, even when the object was evicted in between", async () => {
    const { conversation, agentId, token, stub } = await setup();
    const abandoned = await sayUntilPlanned(token, conversation, agentId);
    // Evicted: the next call reaches a fresh instance that holds no chain in memory.
    // (A throw inside blockConcurrencyWhile resets the object, as the runtime does on eviction.)
    const evicted = await runInDurableObject(stub, (_instance, state) =>
      state.blockConcurrencyWhile(() => Promise.reject(new Error("evicted by the test"))),
    ).then(
      () => false,
      () => true,
    );
    expect(evicted).toBe(true);
    // A stub that reached the reset object stays broken; the consumer and this test take new ones.
    const fresh = conversationStub(env, conversation);

    expect((await consume("foldline-compaction-dlq", [await jobFor(conversation, agentId, abandoned)])).explicitAcks).toEqual(["msg-0"]);
    // A second copy of the job (one the watchdog re-sent) dead-lettered too: the plan is closed once.
    expect((await consume("foldline-compaction-dlq", [await jobFor(conversation, agentId, abandoned)])).explicitAcks).toEqual(["msg-0"]);
    expect((await readIncidents(env.DB, conversation, 50)).filter((i) => i.kind === "compactor_abandoned").map((i) => i.runId)).toEqual([abandoned]);

    // No message arrives: the backoff deadline (1 s here) alone must bring the next plan.
    const replanned = await waitFor(async () => {
      const state = await fresh.describeChain(conversation, agentId);
      return state?.openRunId !== null && state?.openRunId !== abandoned ? state : undefined;
    }, "a new plan after the dead-letter", 20_000);
    expect(replanned.openPlan?.dispatches).toBe(1);
    const plans = await env.DB.prepare("SELECT run_id FROM compaction_plans WHERE conversation_id = ? ORDER BY created_at").bind(conversation).all<{ run_id: string }>();
    expect(plans.results.map((p) => p.run_id)).toEqual([abandoned, replanned.openRunId]);
  }, 60_000);

  it("an alarm resumes only the chains that were pending, and neither an alarm nor a context read activates an agent that saw no eligible message", async () => {
    const { conversation, agentId, token, stub } = await setup();
    const pending = await sayUntilPlanned(token, conversation, agentId);
    // Another agent starts serving this chat; its history is well past this agent's trigger.
    const other = `${agentId}-late`;
    const otherToken = await tokenFor(conversation, `agent:${other}`);
    expect((await register(otherToken, { agentId: other, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
    const activations = async () =>
      (await env.DB.prepare("SELECT activating_seq FROM activations WHERE conversation_id = ? AND agent_id = ?").bind(conversation, other).all<{ activating_seq: number }>()).results;
    const plansOf = async (agent: string) =>
      (await env.DB.prepare("SELECT run_id FROM compaction_plans WHERE conversation_id = ? AND agent_id = ?").bind(conversation, agent).all<{ run_id: string }>()).results;

    // The object's alarm fires (forced now, whatever it was set for).
    await runDurableObjectAlarm(stub);
    expect(await activations()).toEqual([]);
    expect(await plansOf(other)).toEqual([]);
    // A read is served (from the frontier an activation would write) and writes nothing.
    const context = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${other}`, { token: otherToken });
    expect(context.status).toBe(200);
    expect(await activations()).toEqual([]);

    // The pending chain's own deadline fires on its own and re-sends its job; the other agent stays untouched.
    await waitFor(async () => ((await stub.describeChain(conversation, agentId))?.openPlan?.dispatches ?? 0) >= 2 || undefined, "the pending plan's re-send", 20_000);
    expect((await stub.describeChain(conversation, agentId))?.openRunId).toBe(pending);
    expect(await activations()).toEqual([]);
    expect(await plansOf(other)).toEqual([]);
    expect((await stub.describeChain(conversation, other))?.activated).toBe(false);

    // The first eligible source turn activates it, at that turn.
    await say(token, conversation);
    const [latest] = (await env.DB.prepare("SELECT MAX(seq) AS seq FROM events WHERE conversation_id = ? AND kind = 'source'").bind(conversation).all<{ seq: number }>()).results;
    expect(await activations()).toEqual([{ activating_seq: latest?.seq }]);
    expect((await stub.describeChain(conversation, other))?.activated).toBe(true);
  }, 60_000);

  it("an alarm set by a version that kept no deadlines adopts the open plan: it gets a watchdog and its job is re-sent", async () => {
    const { conversation, agentId, token, stub } = await setup();
    const open = await sayUntilPlanned(token, conversation, agentId);
    // The object as an earlier version left it: an alarm, and no deadline rows; then evicted.
    await runInDurableObject(stub, async (_instance, state) => {
      for (const key of (await state.storage.list({ prefix: "wake:" })).keys()) await state.storage.delete(key);
      await state.storage.setAlarm(Date.now() + 60_000);
    });
    await runInDurableObject(stub, (_instance, state) => state.blockConcurrencyWhile(() => Promise.reject(new Error("evicted by the test")))).catch(() => undefined);
    const fresh = conversationStub(env, conversation);
    await runDurableObjectAlarm(fresh);
    // Read from storage, not through the engine (loading the chain would adopt the plan by itself).
    const adopted = await runInDurableObject(fresh, async (_instance, state) => ({ wake: await state.storage.get(`wake:watchdog:${agentId}`), alarm: await state.storage.getAlarm() }));
    expect(adopted.wake).toMatchObject({ kind: "plan_watchdog", runId: open });
    expect(adopted.alarm).not.toBeNull();
    const state = await waitFor(async () => {
      const s = await fresh.describeChain(conversation, agentId);
      return (s?.openPlan?.dispatches ?? 0) >= 2 ? s : undefined;
    }, "the adopted plan's job re-sent", 20_000);
    expect(state.openRunId).toBe(open);
  }, 60_000);
});
