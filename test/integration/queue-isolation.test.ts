import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import worker from "../../src/index";
import type { CompactionJob, Job, ReplyJob } from "../../src/core/jobs";
import { readIncidents } from "../support/reads";
import type { ScriptStep } from "../fake-openai/server";
import { pair, register } from "../support/declarations";
import { settledChain } from "../support/chain";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * One queue batch carries jobs of many conversations: whatever goes wrong in one job — of any type,
 * thrown or returned — is that job's failed attempt (a failed run and an incident) and its own
 * retry, never the batch's. The consumer is driven directly with a batch, so the test decides what
 * shares it. The profile "fakeiso" is this file's own session on the fake model endpoint.
 */

const session = `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/queue-isolation`;

async function script(steps: readonly ScriptStep[]): Promise<void> {
  expect((await fetch(`${session}/__script`, { method: "POST", body: JSON.stringify(steps) })).status).toBe(204);
}
async function requestCount(): Promise<number> {
  return ((await (await fetch(`${session}/__requests`)).json()) as unknown[]).length;
}

beforeEach(async () => {
  await fetch(`${session}/__reset`, { method: "POST" });
});

let counter = 0;
/** A conversation whose chain settled once, and the job that compacted it (sent again below). */
async function settledConversation(): Promise<{ conversation: string; agentId: string; token: string; job: CompactionJob }> {
  const conversation = freshConversation();
  const agentId = `iso-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, profile: "fakeiso", outputMode: "plain" })).status).toBe(201);
  for (let i = 0; i < 20; i++) {
    const text = `Message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + i} euros and a venue with a garden.`;
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, text) })).status).toBe(201);
  }
  const { chain } = await settledChain(conversation, agentId, 1);
  const plan = await (await shardOf(conversation)).prepare("SELECT run_id, packet_key, packet_hash FROM compaction_plans WHERE run_id = ?")
    .bind(chain[0]?.runId)
    .first<{ run_id: string; packet_key: string; packet_hash: string }>();
  if (plan === null) throw new Error("no plan row");
  const job: CompactionJob = {
    type: "compaction",
    conversationId: conversation,
    agentId,
    runId: plan.run_id,
    packetKey: plan.packet_key,
    packetHash: plan.packet_hash,
    model: "test-model",
    profile: "fakeiso",
  };
  return { conversation, agentId, token, job };
}

interface RunEvent {
  kind: string;
  body: { runId?: string; status?: string; error?: { code: string; message: string } };
}

describe("queue jobs are isolated", () => {
  it("a 200 answer whose body is not JSON fails its own job (failed run + incident, retried) while the rest of the batch runs", async () => {
    const poisoned = await settledConversation();
    const healthy = await settledConversation();
    await fetch(`${session}/__reset`, { method: "POST" });
    // The first model call of the batch gets a body that is not JSON; the next one a valid answer.
    await script([{ rawBody: "<html>upstream hiccup</html>" }]);

    const batch = createMessageBatch("foldline-compaction", [
      { id: "poisoned", timestamp: new Date(), attempts: 1, body: poisoned.job },
      { id: "healthy", timestamp: new Date(), attempts: 1, body: healthy.job },
      { id: "garbage", timestamp: new Date(), attempts: 1, body: { type: "compaction", nonsense: true } as unknown as CompactionJob },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    const result = await getQueueResult(batch, ctx);

    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["poisoned"]);
    expect(result.explicitAcks.sort()).toEqual(["garbage", "healthy"]);
    expect(result.retryBatch.retry).toBe(false);
    // Both jobs reached the model: the healthy one was not held hostage by the poisoned one.
    expect(await requestCount()).toBe(2);

    const page = await json<{ events: RunEvent[] }>(await call("GET", `${eventsPath(poisoned.conversation)}?limit=500`, { token: poisoned.token }));
    const failed = page.events.filter((e) => e.kind === "run" && e.body.status === "failed" && e.body.runId === poisoned.job.runId);
    expect(failed.map((e) => e.body.error?.code)).toEqual(["uncaught_syntaxerror"]);
    expect(failed[0]?.body.error?.message).toMatch(/SyntaxError/);
    const incidents = await readIncidents(await shardOf(poisoned.conversation), poisoned.conversation, 20);
    expect(incidents.filter((i) => i.kind === "compactor_failure" && i.runId === poisoned.job.runId).map((i) => i.code)).toEqual(["uncaught_syntaxerror"]);
    expect((await readIncidents(await shardOf(healthy.conversation), healthy.conversation, 20)).filter((i) => i.kind === "compactor_failure")).toEqual([]);
  });

  it("an error thrown anywhere in a job (here: a packet whose bytes are not JSON) is that job's failed run, never the batch's", async () => {
    const broken = await settledConversation();
    const healthy = await settledConversation();
    await fetch(`${session}/__reset`, { method: "POST" });
    // A packet that verifies against its hash but is not JSON: reading it throws a SyntaxError.
    const text = "this packet is not JSON";
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)))].map((b) => b.toString(16).padStart(2, "0")).join("");
    const packetKey = `packets/broken/${broken.job.runId}.json`;
    await env.DOCUMENTS.put(packetKey, text);
    const job: CompactionJob = { ...broken.job, packetKey, packetHash: digest };

    const batch = createMessageBatch("foldline-compaction", [
      { id: "broken", timestamp: new Date(), attempts: 2, body: job },
      { id: "healthy", timestamp: new Date(), attempts: 1, body: healthy.job },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["broken"]);
    expect(result.explicitAcks).toEqual(["healthy"]);
    expect(await requestCount()).toBe(1);

    const page = await json<{ events: RunEvent[] }>(await call("GET", `${eventsPath(broken.conversation)}?limit=500`, { token: broken.token }));
    const failed = page.events.filter((e) => e.kind === "run" && e.body.status === "failed" && e.body.runId === broken.job.runId);
    expect(failed.map((e) => e.body.error?.code)).toEqual(["packet_invalid"]);
    const incidents = await readIncidents(await shardOf(broken.conversation), broken.conversation, 20);
    expect(incidents.filter((i) => i.kind === "compactor_failure").map((i) => i.code)).toEqual(["packet_invalid"]);
  });

  it("a reply job that throws is its agent's failed run and incident, and the compaction job beside it runs", async () => {
    const healthy = await settledConversation();
    // A message, then an agent that answers with its own model: the reply job is the test's to send.
    const conversation = freshConversation();
    const agentId = `iso-reply-${Date.now().toString(36)}-${counter++}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const posted = await json<{ event: { seq: number } }>(await call("POST", eventsPath(conversation), { token, body: sourceEvent("q1", "q1", "Which venue did we pick?") }));
    const body = pair({ agentId, sources: [conversation], profile: "fakeiso" });
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: { ...body, agent: { ...body.agent, reply: { mode: "builtin" } } } })).status).toBe(201);
    await fetch(`${session}/__reset`, { method: "POST" });
    await script([{ rawBody: "<html>upstream hiccup</html>" }]);

    const replyJob: ReplyJob = { type: "reply", conversationId: conversation, agentId, sourceSeq: posted.event.seq, sourceMessageId: "q1" };
    const batch = createMessageBatch<Job>("foldline-compaction", [
      { id: "reply", timestamp: new Date(), attempts: 1, body: replyJob },
      { id: "healthy", timestamp: new Date(), attempts: 1, body: healthy.job },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["reply"]);
    expect(result.explicitAcks).toEqual(["healthy"]);
    expect(await requestCount()).toBe(2);

    const page = await json<{ events: RunEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=500`, { token }));
    const failed = page.events.filter((e) => e.kind === "run" && e.body.status === "failed");
    expect(failed.map((e) => [e.body.runId, e.body.error?.code])).toEqual([[`reply:${agentId}:${posted.event.seq}:run`, "uncaught_syntaxerror"]]);
    expect((await readIncidents(await shardOf(conversation), conversation, 20)).map((i) => [i.kind, i.code])).toEqual([["agent_failure", "uncaught_syntaxerror"]]);
  });
});
