import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { sha256Hex } from "../../src/core/hash";
import { conversationStub } from "../../src/durable/stub";
import worker from "../../src/index";
import { compactionJobSchema } from "../../src/core/jobs";
import { readChainBoundaries, readIncidents } from "../support/reads";
import { pair, register } from "../support/declarations";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";
import { insertPlan, settledChain, waitFor } from "../support/chain";
import { shardOf } from "../support/shards";

let agentCounter = 0;
const freshAgent = (): string => `agent-${Date.now().toString(36)}-${agentCounter++}`;

interface RunEvent {
  seq: number;
  kind: string;
  body: { runId?: string; status?: string; error?: { code: string }; detail?: Record<string, unknown> };
}

async function runEvents(token: string, conversation: string): Promise<RunEvent[]> {
  const page = await json<{ events: RunEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=500`, { token }));
  return page.events.filter((e) => e.kind === "run");
}

/**
 * Each message states a fact of its own (a guest, a room, a price): the offline compactor folds
 * restatements of one fact into its latest value, so a thread of one fact restated settles into a
 * one-line boundary, and how many compactions follow would depend on timing.
 */
const talk = (i: number): string =>
  `Message ${i}: about the offsite venue, ${i % 3 === 0 ? "Lisbon" : "Porto"} is preferred by guest ${i}, who books room ${100 + i} on a budget of ${1000 + i * 10} euros.`;

async function say(token: string, conversation: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const res = await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, talk(i)) });
    expect(res.status).toBe(201);
  }
}

async function setup(options: { trigger?: number; retain?: number } = {}) {
  const conversation = freshConversation();
  const agentId = freshAgent();
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], ...options })).status).toBe(201);
  return { conversation, agentId, token };
}

describe("declarations", () => {
  it("refuses a pair that disagrees, naming every field", async () => {
    const agentId = freshAgent();
    const token = await tokenFor(`agent:${agentId}`, "api:x:*");
    const good = pair({ agentId, sources: ["api:x:*"] });
    const bad = {
      agent: good.agent,
      compactor: { ...good.compactor, enabled: false, admitSensitive: true, provider: { profile: "default", model: "other" }, historyAgents: [] },
    };
    const res = await call("PUT", `/v1/agents/${agentId}`, { token, body: bad });
    expect(res.status).toBe(422);
    const error = await json<ErrorBody>(res);
    expect(error.error.code).toBe("declaration_mismatch");
    expect((error.error["mismatches"] as { field: string }[]).map((m) => m.field).sort()).toEqual(
      ["admitSensitive", "enabled", "historyAgents", "provider.model"].sort(),
    );
    expect((await call("GET", `/v1/agents/${agentId}`, { token })).status).toBe(404);
  });

  it("refuses retain ≥ trigger, unknown documents, and ids already in use", async () => {
    const agentId = freshAgent();
    const token = await tokenFor(`agent:${agentId}`, "agent:*", "api:x:*");
    const body = pair({ agentId, sources: ["api:x:*"], trigger: 1_000, retain: 1_000 });
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body })).status).toBe(400);
    const withDocument = pair({ agentId, sources: ["api:x:*"] });
    const doc = { name: "identity", hash: sha256Hex("never uploaded") };
    const res = await call("PUT", `/v1/agents/${agentId}`, {
      token,
      body: { agent: { ...withDocument.agent, documents: [doc] }, compactor: { ...withDocument.compactor, documents: [doc] } },
    });
    expect((await json<ErrorBody>(res)).error.code).toBe("unknown_document");
    expect((await register(token, { agentId, sources: ["api:x:*"] })).status).toBe(201);
    // Another agent may not claim this agent's compactor id.
    const other = freshAgent();
    const clash = pair({ agentId: other, sources: ["api:x:*"] });
    const stolen = { agent: { ...clash.agent, compactorId: `${agentId}.compactor` }, compactor: { ...clash.compactor, id: `${agentId}.compactor` } };
    expect((await json<ErrorBody>(await call("PUT", `/v1/agents/${other}`, { token, body: stolen }))).error.code).toBe("id_in_use");
  });

  it("registers idempotently and starts a new epoch when the prompt changes", async () => {
    const agentId = freshAgent();
    const token = await tokenFor(`agent:${agentId}`, "api:x:*");
    const first = await json<{ revision: number; epoch: { id: string } }>(await register(token, { agentId, sources: ["api:x:*"] }));
    const again = await register(token, { agentId, sources: ["api:x:*"] });
    expect(again.status).toBe(200);
    expect((await json<{ revision: number }>(again)).revision).toBe(first.revision);
    const changed = await json<{ revision: number; epoch: { id: string } }>(await register(token, { agentId, sources: ["api:x:*"], prompt: "Summarize tersely." }));
    expect(changed.revision).toBe(first.revision + 1);
    expect(changed.epoch.id).not.toBe(first.epoch.id);
  });
});

describe("compaction end to end (offline compactor)", () => {
  it("skips below the trigger with content-dark runs, then plans, compacts and chains", async () => {
    const { conversation, agentId, token } = await setup({ trigger: 2_000, retain: 800 });
    await say(token, conversation, 0, 30);
    const { chain } = await settledChain(conversation, agentId, 2);
    const [first, second] = chain;
    expect(first?.body.previous).toBeNull();
    expect(second?.body.previous).toEqual({ id: first?.body.id, hash: first?.hash, coveredThroughSeq: first?.coveredThroughSeq });
    expect(second?.coveredThroughSeq).toBeGreaterThan(first?.coveredThroughSeq ?? Infinity);
    expect(first?.body.model.provider).toBe("foldline-extractive");
    expect(first?.body.sensitive).toBe(true);

    const runs = await runEvents(token, conversation);
    const skipped = runs.filter((r) => r.body.status === "skipped");
    expect(skipped.length).toBeGreaterThan(5);
    // Content-dark: counts and labels only, never text from the conversation.
    for (const run of skipped) {
      expect(Object.keys(run.body.detail ?? {}).sort()).toEqual(["activeChars", "activeMessages", "reason", "sourceSeq", "triggerInputChars"]);
    }
    expect(runs.filter((r) => r.body.status === "completed")).toHaveLength(chain.length);
    expect(runs.filter((r) => r.body.status === "planned")).toHaveLength(chain.length);
  });

  it("recalls the agent's memory pages into the packet and points at them instead of restating", async () => {
    const { conversation, agentId, token } = await setup({ trigger: 2_000, retain: 800 });
    const page = "Offsite venue decision: Lisbon was chosen by Ada; Porto was the runner-up because of the budget.";
    expect((await call("PUT", `/v1/agents/${agentId}/memory/decisions/offsite-venue`, { token, body: { content: page } })).status).toBe(201);
    await call("PUT", `/v1/agents/${agentId}/memory/people/unrelated`, { token, body: { content: "Zed likes chess and tea." } });
    await say(token, conversation, 0, 20);
    const { chain } = await settledChain(conversation, agentId, 1);
    const packet = JSON.parse((await (await env.DOCUMENTS.get(chain[0]?.body.packet.key ?? ""))?.text()) ?? "{}") as { memoryPages: { path: string; content: string }[] };
    expect(packet.memoryPages.map((p) => p.path)).toEqual(["decisions/offsite-venue"]);
    expect(packet.memoryPages[0]?.content).toBe(page);
    expect(chain[0]?.body.content.salientFacts.memoryRefs.map((r) => r.path)).toEqual(["decisions/offsite-venue"]);
    expect(chain[0]?.body.content.degraded).toBe(false);
  });

  it("activates an established conversation with a bounded frontier", async () => {
    const conversation = freshConversation();
    const agentId = freshAgent();
    const token = await tokenFor(conversation, `agent:${agentId}`);
    await say(token, conversation, 0, 120); // ~17,000 characters of history before any declaration
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
    await say(token, conversation, 120, 121);

    const activation = await (await shardOf(conversation)).prepare("SELECT frontier_id, frontier_hash, start_seq, activating_seq FROM activations WHERE conversation_id = ? AND agent_id = ?")
      .bind(conversation, agentId)
      .first<{ frontier_id: string; frontier_hash: string; start_seq: number; activating_seq: number }>();
    expect(activation?.activating_seq).toBe(121);
    // Only the newest whole groups reaching the trigger: about 2,000 of the 17,000 characters.
    expect(activation?.start_seq).toBeGreaterThan(100);
    const frontier = await env.DOCUMENTS.get(`frontiers/${activation?.frontier_id}.json`);
    const text = (await frontier?.text()) ?? "";
    expect(sha256Hex(text)).toBe(activation?.frontier_hash);

    const { chain } = await settledChain(conversation, agentId, 1);
    const packet = JSON.parse((await (await env.DOCUMENTS.get(chain[0]?.body.packet.key ?? ""))?.text()) ?? "{}") as { frozen: { turns: { group: number }[]; chars: number } };
    expect(Math.min(...packet.frozen.turns.map((t) => t.group))).toBeGreaterThanOrEqual(activation?.start_seq ?? 0);
    expect(packet.frozen.chars).toBeLessThan(2_000);
  });

  it("fails closed when the newest message alone exceeds the tail target", async () => {
    const { conversation, agentId, token } = await setup({ trigger: 2_000, retain: 800 });
    await say(token, conversation, 0, 5);
    const huge = "x".repeat(2_500);
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("huge", "huge", huge) })).status).toBe(201);
    const failed = (await runEvents(token, conversation)).filter((r) => r.body.status === "failed");
    expect(failed.map((r) => r.body.error?.code)).toEqual(["tail_group_too_large"]);
    expect(await readChainBoundaries(await shardOf(conversation), conversation, agentId)).toHaveLength(0);
    const incidents = await readIncidents(await shardOf(conversation), conversation, 10);
    expect(incidents.map((i) => [i.kind, i.code])).toEqual([["plan_failure", "tail_group_too_large"]]);
    // Once a newer group exists the big one can be frozen whole: never split, never silently cut.
    await say(token, conversation, 5, 6);
    const { chain } = await settledChain(conversation, agentId, 1);
    const packet = JSON.parse((await (await env.DOCUMENTS.get(chain[0]?.body.packet.key ?? ""))?.text()) ?? "{}") as { frozen: { turns: { text: string }[] } };
    expect(packet.frozen.turns.some((t) => t.text === huge)).toBe(true);
  });

  it("settles a duplicated queue delivery to the same single boundary, paying the model once", async () => {
    // The compactor is the fake model (profile "fake", the default session): this chain's calls are
    // the ones naming its own model.
    const model = `dup-${crypto.randomUUID()}`;
    const conversation = freshConversation();
    const agentId = freshAgent();
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, profile: "fake", model, outputMode: "plain" })).status).toBe(201);
    const modelCalls = async (): Promise<number> =>
      ((await (await fetch(`${new URL(inject("fakeOpenAiBaseUrl")).origin}/__requests`)).json()) as { body: { model?: string } }[]).filter((r) => r.body.model === model).length;
    await say(token, conversation, 0, 20);
    const { chain } = await settledChain(conversation, agentId, 1);
    const first = chain[0];
    // One call per compaction of the chain.
    expect(await modelCalls()).toBe(chain.length);
    const plan = await (await shardOf(conversation)).prepare("SELECT * FROM compaction_plans WHERE run_id = ?").bind(first?.runId).first<{ run_id: string; packet_key: string; packet_hash: string; agent_id: string }>();
    const job = compactionJobSchema.parse({
      type: "compaction",
      conversationId: conversation,
      agentId,
      runId: plan?.run_id,
      packetKey: plan?.packet_key,
      packetHash: plan?.packet_hash,
      model,
      profile: "fake",
    });
    const batch = createMessageBatch("foldline-compaction", [
      { id: "dup-1", timestamp: new Date(), attempts: 1, body: job },
      { id: "dup-2", timestamp: new Date(), attempts: 2, body: job },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks.sort()).toEqual(["dup-1", "dup-2"]);
    const after = await readChainBoundaries(await shardOf(conversation), conversation, agentId);
    expect(after.filter((b) => b.runId === first?.runId)).toHaveLength(1);
    expect(after[0]?.hash).toBe(first?.hash);
    // The duplicates found the run settled and asked the model nothing.
    expect(await modelCalls()).toBe(chain.length);
  });

  it("refuses to settle a fabricated or stale run, and a retired epoch never blocks the new one", async () => {
    const { conversation, agentId, token } = await setup({ trigger: 2_000, retain: 800 });
    await say(token, conversation, 0, 20);
    const { chain: oldChain } = await settledChain(conversation, agentId, 1);
    const stub = conversationStub(env, conversation);
    const content = oldChain[0]?.body.content;
    const model = oldChain[0]?.body.model;
    if (content === undefined || model === undefined) throw new Error("no boundary");

    const fabricated = await stub.settle(conversation, "cmp_00000000-0000-4000-8000-000000000000", content, model, "");
    expect(fabricated.ok ? "ok" : fabricated.error.code).toBe("fabricated_run");

    // A new prompt is a new epoch: a new activation and a first boundary of its own.
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, prompt: "Summarize tersely, as a projection." })).status).toBe(201);
    const replay = await stub.settle(conversation, oldChain[0]?.runId ?? "", content, model, "");
    expect(replay.ok && replay.value.hash).toBe(oldChain[0]?.hash); // settling a settled run returns its boundary
    // A plan of the retired epoch that never settled can no longer become a boundary.
    const staleRun = "cmp_11111111-1111-4111-8111-111111111111";
    await insertPlan(conversation, agentId, oldChain[0]?.epochId ?? "", staleRun, oldChain[0]?.body.id ?? "");
    const stale = await stub.settle(conversation, staleRun, content, model, "");
    expect(stale.ok ? "ok" : [stale.error.code, stale.error.message]).toEqual(["stale_plan", "the plan belongs to a retired epoch"]);
    await say(token, conversation, 20, 40);
    const state = await waitFor(async () => {
      const s = await stub.describeChain(conversation, agentId);
      return s !== undefined && s.headId !== null && s.openRunId === null ? s : undefined;
    }, "a boundary in the new epoch");
    expect(state.epochId).not.toBe(oldChain[0]?.epochId);
    const all = await readChainBoundaries(await shardOf(conversation), conversation, agentId);
    const newEpoch = all.filter((b) => b.epochId === state.epochId);
    expect(newEpoch[0]?.body.previous).toBeNull();
    // Old epoch boundaries stay stored and inspectable, and are never the head of the new chain.
    expect(all.filter((b) => b.epochId === oldChain[0]?.epochId).length).toBeGreaterThanOrEqual(1);
    expect(newEpoch.map((b) => b.body.id)).toContain(state.headId);
    const activations = await (await shardOf(conversation)).prepare("SELECT COUNT(*) AS n FROM activations WHERE conversation_id = ? AND agent_id = ?").bind(conversation, agentId).first<{ n: number }>();
    expect(activations?.n).toBe(2);
  });

  it("refuses a forked boundary at the storage level", async () => {
    const { conversation, agentId, token } = await setup({ trigger: 2_000, retain: 800 });
    await say(token, conversation, 0, 20);
    const { chain } = await settledChain(conversation, agentId, 1);
    const first = chain[0];
    // A second successor of "no predecessor" in the same epoch, from a plan of its own.
    const forgedRun = "cmp_22222222-2222-4222-8222-222222222222";
    await insertPlan(conversation, agentId, first?.epochId ?? "", forgedRun, "");
    // A row id of this test's own (the files of a workerd share its databases): only the fork is refused.
    const forgedId = `bnd_forged_${crypto.randomUUID().slice(0, 8)}`;
    const shard = await shardOf(conversation);
    await expect(
      shard.prepare(
        `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
         VALUES (?, ?, ?, ?, 9, '', NULL, 1, ?, '{}', ?, 'now')`,
      )
        .bind(forgedId, conversation, agentId, first?.epochId, forgedRun, "0".repeat(64))
        .run(),
    ).rejects.toThrow(/UNIQUE constraint failed: boundaries.conversation_id, boundaries.agent_id, boundaries.epoch_id, boundaries.previous_id/);
  });
});
