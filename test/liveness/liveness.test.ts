import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { conversationStub } from "../../src/durable/stub";
import { readIncidents } from "../support/reads";
import { shardOf } from "../support/shards";
import { register } from "../support/declarations";
import { waitFor } from "../support/chain";
import { compactionJobFor, deliver } from "../support/queue";
import type { ChainHealth } from "../../src/api/chain";
import { conversationPath } from "../../src/http/inspector/paths";
import { call, json, tokenFor } from "../integration/helpers";
import { inspectorPage } from "../support/inspector";
import { say, sayUntilPlanned, sentJobs, sentNotices, setup } from "./harness";

/**
 * Compaction stays live with nothing arriving (the project's settings: ./harness.ts). The tests
 * deliver jobs themselves, and otherwise only wait (with deadlines) for the object's own alarms:
 * nothing else is allowed to move the chain.
 */

/**
 * The plan watchdog as the object stores it, the platform alarm, and the chain as the object
 * describes it, read until two reads of the storage agree around the description: the watchdog
 * re-arms every period, so a single read could straddle a firing.
 */
async function steadyWatchdog(stub: ReturnType<typeof conversationStub>, conversation: string, agentId: string) {
  const stored = () =>
    runInDurableObject(stub, async (_instance, state) => ({ wake: await state.storage.get<{ kind: string; runId: string; at: number }>(`wake:watchdog:${agentId}`), alarm: await state.storage.getAlarm() }));
  return waitFor(async () => {
    const before = await stored();
    const state = await stub.describeChain(conversation, agentId);
    const after = await stored();
    return JSON.stringify(before) === JSON.stringify(after) ? { state, ...after } : undefined;
  }, "a steady read of the watchdog");
}

describe("compaction stays live without new messages", () => {
  it("re-sends the vanished job of a back-to-back plan from its own watchdog, pages once it stalls, and settles when the job runs", async () => {
    const { conversation, agentId, token, stub } = await setup();
    const first = await sayUntilPlanned(token, conversation, agentId);
    // Enough behind the first plan that its settle plans the next one at once (back to back).
    for (let i = 0; i < 15; i++) await say(token, conversation);
    expect((await deliver("foldline-compaction", [await compactionJobFor(conversation, agentId, first)])).explicitAcks).toEqual(["msg-0"]);
    const afterFirst = await stub.describeChain(conversation, agentId);
    const second = afterFirst?.openRunId ?? "";
    expect(afterFirst?.headId).toBe(`bnd_${first.replace(/^cmp_/, "")}`);
    expect(second).not.toBe("");
    expect(second).not.toBe(first);

    // The second plan's job vanished and nothing new arrives: only the object's own deadlines act.
    const stalled = await waitFor(async () => {
      const incidents = await readIncidents(await shardOf(conversation), conversation, 50);
      return incidents.find((i) => i.kind === "compaction_stalled" && i.runId === second);
    }, "a compaction_stalled incident for the second plan", 20_000);
    expect(stalled.code).toBe("plan_stalled");
    // The plan is still open and its watchdog armed: what the object says is the deadline it stores,
    // and the one platform alarm is set no later than it (read as state, never against the clock).
    const { state, wake, alarm } = await steadyWatchdog(stub, conversation, agentId);
    expect(state?.openRunId).toBe(second);
    expect(state?.openPlan?.dispatches).toBeGreaterThanOrEqual(2);
    expect(wake).toMatchObject({ kind: "plan_watchdog", runId: second });
    expect(state?.openPlan?.nextWakeAt).toBe(wake?.at);
    expect(alarm).not.toBeNull();
    expect(alarm).toBeLessThanOrEqual(wake?.at ?? 0);
    // The operator sees it: the listing's health and the inspector name the plan, its age, re-sends and the page.
    const listing = await json<{ health: ChainHealth }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/chain?agent=${agentId}`, { token }));
    expect(listing.health.openPlan).toMatchObject({ runId: second, failedAttempts: 0 });
    expect(listing.health.openPlan?.ageSeconds).toBeGreaterThanOrEqual(3);
    expect(listing.health.openPlan?.dispatches).toBeGreaterThanOrEqual(2);
    // Armed at least a watchdog period (1 s here) after the plan was made.
    expect(Date.parse(listing.health.openPlan?.nextWakeAt ?? "")).toBeGreaterThanOrEqual(Date.parse(listing.health.openPlan?.createdAt ?? "") + 1_000);
    expect(listing.health.lastFailure).toMatchObject({ kind: "compaction_stalled", code: "plan_stalled", runId: second });
    const page = await inspectorPage(token, conversationPath(conversation, { agent: agentId }));
    expect(page).toMatch(/data-testid="chain-health" data-state="in-flight"/);
    expect(page).toContain(`data-run-id="${second}"`);
    expect(page).toMatch(/data-testid="last-failure" data-kind="compaction_stalled"/);

    // One page per plan, however many times its job was sent again.
    await waitFor(async () => ((await stub.describeChain(conversation, agentId))?.openPlan?.dispatches ?? 0) >= 4 || undefined, "two more re-sends", 20_000);
    // (On a loaded machine the first plan may have stalled too before its job was delivered: it
    // gets its own page, and no plan gets two.)
    const stalledPages = (await readIncidents(await shardOf(conversation), conversation, 50)).filter((i) => i.kind === "compaction_stalled");
    expect(stalledPages.filter((i) => i.runId === second)).toHaveLength(1);
    expect(new Set(stalledPages.map((i) => i.runId)).size).toBe(stalledPages.length);

    // Every re-send reached the queue as the plan's own job (the same packet): the last one runs,
    // and the chain settles with no message needed.
    const resent = await sentJobs(second, 4);
    const job = await compactionJobFor(conversation, agentId, second);
    expect(resent).toEqual(resent.map(() => job));
    await deliver("foldline-compaction", [resent.at(-1)]);
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

    expect((await deliver("foldline-compaction-dlq", [await compactionJobFor(conversation, agentId, abandoned)])).explicitAcks).toEqual(["msg-0"]);
    // A second copy of the job (one the watchdog re-sent) dead-lettered too: the plan is closed once.
    expect((await deliver("foldline-compaction-dlq", [await compactionJobFor(conversation, agentId, abandoned)])).explicitAcks).toEqual(["msg-0"]);
    expect((await readIncidents(await shardOf(conversation), conversation, 50)).filter((i) => i.kind === "compactor_abandoned").map((i) => i.runId)).toEqual([abandoned]);
    // The operator's chat (this project's OPERATOR_CHAT) is told: codes and ids only.
    const [botId = "", chatId = ""] = env.OPERATOR_CHAT.split(":");
    const text = `Foldline incident: compactor_abandoned retries_exhausted — agent ${agentId} in ${conversation} (run ${abandoned})`;
    expect(await sentNotices(conversation, "compactor_abandoned", 1)).toEqual([{ type: "notice", botId, chatId: Number(chatId), text }]);

    // No message arrives: the backoff deadline (1 s here) alone must bring the next plan.
    const replanned = await waitFor(async () => {
      const state = await fresh.describeChain(conversation, agentId);
      return state?.openRunId !== null && state?.openRunId !== abandoned ? state : undefined;
    }, "a new plan after the dead-letter", 20_000);
    expect(replanned.openPlan?.dispatches).toBe(1);
    const plans = await (await shardOf(conversation)).prepare("SELECT run_id FROM compaction_plans WHERE conversation_id = ? ORDER BY created_at").bind(conversation).all<{ run_id: string }>();
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
      (await (await shardOf(conversation)).prepare("SELECT activating_seq FROM activations WHERE conversation_id = ? AND agent_id = ?").bind(conversation, other).all<{ activating_seq: number }>()).results;
    const plansOf = async (agent: string) =>
      (await (await shardOf(conversation)).prepare("SELECT run_id FROM compaction_plans WHERE conversation_id = ? AND agent_id = ?").bind(conversation, agent).all<{ run_id: string }>()).results;

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
    const [latest] = (await (await shardOf(conversation)).prepare("SELECT MAX(seq) AS seq FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND kind = 'source'").bind(conversation).all<{ seq: number }>()).results;
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
    const job = await compactionJobFor(conversation, agentId, open);
    const resent = await sentJobs(open, 2);
    expect(resent).toEqual(resent.map(() => job));
  }, 60_000);

  it("a settled plan leaves no watchdog, and one left behind that fires later is dropped: no re-send, no stall page", async () => {
    const { conversation, agentId, token, stub } = await setup();
    const runId = await sayUntilPlanned(token, conversation, agentId);
    const [job] = await sentJobs(runId, 1);
    expect((await deliver("foldline-compaction", [job])).explicitAcks).toEqual(["msg-0"]);
    const settled = await stub.describeChain(conversation, agentId);
    expect(settled).toMatchObject({ headId: `bnd_${runId.replace(/^cmp_/, "")}`, openRunId: null });
    const key = `wake:watchdog:${agentId}`;
    expect(await runInDurableObject(stub, (_instance, state) => state.storage.get(key))).toBeUndefined();

    // A crash between the boundary and the watchdog's removal leaves it behind, due and past the
    // stall threshold, with the alarm set for it. Whoever fires the alarm (the platform, or the test
    // when the platform has not yet), the state it leaves is what is checked.
    const epochId = settled?.epochId ?? "";
    await runInDurableObject(stub, async (_instance, state) => {
      const now = Date.now();
      await state.storage.put(key, { kind: "plan_watchdog", at: now - 1, agentId, epochId, runId, planCreatedAt: now - 60_000, dispatches: 1, stalledReported: false });
      await state.storage.setAlarm(now);
    });
    await runDurableObjectAlarm(stub);
    const after = await waitFor(async () => {
      const read = await runInDurableObject(stub, async (_instance, state) => ({ wake: await state.storage.get(key), alarm: await state.storage.getAlarm(), wakes: [...(await state.storage.list({ prefix: "wake:" })).keys()] }));
      return read.wake === undefined ? read : undefined;
    }, "the stale watchdog handled");
    // What is left is the boundary's owed extraction (the recorder never runs it), and the alarm is for it alone.
    expect(after.wakes).toEqual([`wake:extraction:${runId}`]);
    expect(after.alarm).not.toBeNull();
    expect((await readIncidents(await shardOf(conversation), conversation, 50)).filter((i) => i.kind === "compaction_stalled")).toEqual([]);
    expect(await stub.describeChain(conversation, agentId)).toMatchObject({ headId: settled?.headId, openRunId: null, openPlan: null });
  }, 60_000);
});
