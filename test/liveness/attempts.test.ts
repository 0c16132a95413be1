import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { MAX_PLAN_ATTEMPTS } from "../../src/core/jobs";
import { wakeKey } from "../../src/core/wakeups";
import { conversationStub } from "../../src/durable/stub";
import { readIncidents } from "../support/reads";
import { register } from "../support/declarations";
import { shardOf } from "../support/shards";
import { deliver } from "../support/queue";
import { tokenFor, freshConversation } from "../integration/helpers";
import { say, sentJobs } from "./harness";

/**
 * A plan pays for a bounded number of model attempts, whichever copies of its job make them: the
 * watchdog sends a stalled plan's job again, and under a backlog the copies arrive together, each
 * with retries of its own (one plan once recorded 137 failed attempts in three minutes, each a paid
 * call). Past MAX_PLAN_ATTEMPTS the plan is closed and its chain backs off.
 */

const origin = `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/liveness-attempts`;

describe("a plan's model attempts", () => {
  it("are bounded whichever copies of its job make them: past the bound the plan is abandoned, its chain backs off, and no copy pays again", async () => {
    await fetch(`${origin}/__reset`, { method: "POST" });
    expect((await fetch(`${origin}/__script`, { method: "POST", body: JSON.stringify(Array.from({ length: 40 }, () => ({ status: 500 }))) })).status).toBe(204);
    const conversation = freshConversation("api:attempts");
    const agentId = `attempts-${crypto.randomUUID().slice(0, 8)}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, model: "attempts-model", profile: "fakelive" })).status).toBe(201);
    const stub = conversationStub(env, conversation);
    let runId: string | null | undefined;
    for (let i = 0; i < 40 && (runId ?? null) === null; i++) {
      await say(token, conversation);
      runId = (await stub.describeChain(conversation, agentId))?.openRunId;
    }
    if (typeof runId !== "string") throw new Error("no plan opened");
    const [job] = await sentJobs(runId, 1);
    if (job === undefined) throw new Error("no job sent");

    // Four copies of the job (the first and three the watchdog sent), each delivered with its retries.
    for (let copy = 0; copy < 4; copy++) for (let attempts = 1; attempts <= 6; attempts++) await deliver("foldline-compaction", [job], { attempts });

    const calls = ((await (await fetch(`${origin}/__requests`)).json()) as { body: { model?: string } }[]).filter((r) => r.body.model === "attempts-model");
    expect(calls).toHaveLength(MAX_PLAN_ATTEMPTS);
    const incidents = await readIncidents(await shardOf(conversation), conversation, 50);
    expect(incidents.filter((i) => i.kind === "compactor_failure" && i.runId === runId)).toHaveLength(MAX_PLAN_ATTEMPTS);
    expect(incidents.filter((i) => i.kind === "compactor_abandoned").map((i) => i.runId)).toEqual([runId]);
    // The chain backs off: its re-plan is armed, at least the backoff base (1 s here) after the
    // abandonment. A busy machine can reach this line after the backoff ran out and the alarm
    // re-planned; then the new plan is the evidence, made no sooner than the backoff allowed.
    const replan = await runInDurableObject(stub, async (_instance, state) => state.storage.get(wakeKey.replan(agentId)));
    const abandonedAt = Date.parse(incidents.find((i) => i.kind === "compactor_abandoned")?.createdAt ?? "");
    if (replan !== undefined) {
      expect(replan).toMatchObject({ kind: "replan", agentId });
      expect((replan as { at: number }).at - abandonedAt).toBeGreaterThanOrEqual(1_000);
    } else {
      const next = await (await shardOf(conversation))
        .prepare("SELECT created_at FROM compaction_plans WHERE conversation_id = ? AND agent_id = ? AND run_id <> ? ORDER BY created_at DESC LIMIT 1")
        .bind(conversation, agentId, runId)
        .first<{ created_at: string }>();
      expect(next, "neither a re-plan armed nor one made").not.toBeNull();
      expect(Date.parse(next?.created_at ?? "") - abandonedAt).toBeGreaterThanOrEqual(1_000);
    }
  }, 60_000);
});
