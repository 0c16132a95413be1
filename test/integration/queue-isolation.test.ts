import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import worker from "../../src/index";
import type { CompactionJob, Job, ReplyJob } from "../../src/core/jobs";
import { conversationStub } from "../../src/durable/stub";
import { readIncidents } from "../support/reads";
import type { ScriptStep } from "../fake-openai/server";
import { pair, register } from "../support/declarations";
import { settledChain, waitFor } from "../support/chain";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * One queue batch carries jobs of many conversations: whatever goes wrong in one job — of any type,
 * thrown or returned — is that job's failed attempt (a failed run and an incident) and its own
 * retry, never the batch's. The consumer is driven directly with a batch, so the test decides what
 * shares it. The profile "fakeiso" is this file's own session on the fake model endpoint.
 *
 * A job is worth a model call only while its run is open: a copy of the job of a run that settled
 * (a redelivery, a watchdog's re-send) is acked without one and writes nothing. So the copies these
 * tests deliver are of runs kept open: the plan's own job was turned away by the model (rate limited
 * for ten minutes), so the queue holds it back that long and the run stays open meanwhile. That
 * turn-away (`model_rate_limited`) is the one failed attempt each such run starts with.
 */

const session = `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/queue-isolation`;
/** How the model turns the plan's own job away: the queue retries it no sooner than this. */
const TURNED_AWAY: ScriptStep = { status: 429, retryAfter: 600 };
const TURNED_AWAY_CODE = "model_rate_limited";

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

interface Subject {
  readonly conversation: string;
  readonly agentId: string;
  readonly token: string;
  readonly job: CompactionJob;
}

/** A registered conversation talked to until its chain plans a run (a plan opens at the trigger). */
async function talkUntilPlanned(options: { readonly prompt?: string } = {}): Promise<{ conversation: string; agentId: string; token: string; runId: string }> {
  const conversation = freshConversation();
  const agentId = `iso-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, profile: "fakeiso", outputMode: "plain", ...options })).status).toBe(201);
  const stub = conversationStub(env, conversation);
  for (let i = 0; i < 40; i++) {
    const text = `Message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + i} euros and a venue with a garden.`;
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, text) })).status).toBe(201);
    const runId = (await stub.describeChain(conversation, agentId))?.openRunId;
    if (typeof runId === "string") return { conversation, agentId, token, runId };
  }
  throw new Error("no plan after 40 messages");
}

/** The job the object sent for a run, rebuilt from its plan row (every copy names the same packet). */
async function jobOf(conversation: string, agentId: string, runId: string): Promise<CompactionJob> {
  const plan = await (await shardOf(conversation)).prepare("SELECT run_id, packet_key, packet_hash FROM compaction_plans WHERE run_id = ?")
    .bind(runId)
    .first<{ run_id: string; packet_key: string; packet_hash: string }>();
  if (plan === null) throw new Error(`no plan row ${runId}`);
  return { type: "compaction", conversationId: conversation, agentId, runId: plan.run_id, packetKey: plan.packet_key, packetHash: plan.packet_hash, model: "test-model", profile: "fakeiso" };
}

/** A conversation whose chain settled once, and the job that compacted it (delivered again below). */
async function settledConversation(): Promise<Subject & { paidCalls: number }> {
  const { conversation, agentId, token } = await talkUntilPlanned();
  const { chain } = await settledChain(conversation, agentId, 1);
  return { conversation, agentId, token, job: await jobOf(conversation, agentId, chain[0]?.runId ?? ""), paidCalls: chain.length };
}

/**
 * A conversation whose run is open, its plan's own job turned away by the model (`TURNED_AWAY`).
 * `prompt` becomes the compactor's system message, so a script step can single out this
 * conversation's calls (`whenSystemIncludes`).
 */
async function openConversation(prompt?: string): Promise<Subject> {
  await script([TURNED_AWAY]);
  const { conversation, agentId, token, runId } = await talkUntilPlanned(prompt === undefined ? {} : { prompt });
  const subject = { conversation, agentId, token, job: await jobOf(conversation, agentId, runId) };
  await waitFor(async () => ((await compactorFailures(subject)).length > 0 ? true : undefined), `the plan's own job in ${conversation} turned away`);
  return subject;
}

/** A copy of each run's job that the model answers: the run settles, and nothing is left open. */
async function settleRuns(...subjects: readonly Subject[]): Promise<void> {
  await script([]);
  for (const subject of subjects) expect((await consume([{ id: `settle-${subject.job.runId}`, attempts: 1, body: subject.job }])).explicitAcks).toHaveLength(1);
  for (const { conversation, agentId } of subjects) await settledChain(conversation, agentId, 1);
}

async function consume(messages: readonly { id: string; attempts: number; body: Job | Record<string, unknown> }[], consumerEnv: Env = env) {
  const batch = createMessageBatch<Job>("foldline-compaction", messages.map((m) => ({ ...m, timestamp: new Date(), body: m.body as Job })));
  const ctx = createExecutionContext();
  await worker.queue(batch, consumerEnv);
  return getQueueResult(batch, ctx);
}

interface RunEvent {
  seq: number;
  kind: string;
  idempotencyKey: string;
  body: { runId?: string; status?: string; error?: { code: string; message: string }; detail?: Record<string, unknown> };
}

async function runEvents(subject: Subject): Promise<RunEvent[]> {
  const page = await json<{ events: RunEvent[] }>(await call("GET", `${eventsPath(subject.conversation)}?limit=500`, { token: subject.token }));
  return page.events.filter((e) => e.kind === "run" && e.body.runId === subject.job.runId);
}

async function compactorFailures(subject: Subject): Promise<string[]> {
  const incidents = await readIncidents(await shardOf(subject.conversation), subject.conversation, 50);
  return incidents.filter((i) => i.kind === "compactor_failure" && i.runId === subject.job.runId).map((i) => i.code).reverse();
}

describe("queue jobs are isolated", () => {
  it("a 200 answer whose body is not JSON fails its own job (failed run + incident, retried) while the rest of the batch runs", async () => {
    const poisoned = await openConversation("Summarize the slice. POISONED-CHAIN");
    const healthy = await openConversation();
    const before = await requestCount();
    // The poisoned chain's next model call gets a body that is not JSON; every other call a valid answer.
    await script([{ rawBody: "<html>upstream hiccup</html>", whenSystemIncludes: "POISONED-CHAIN" }]);

    const result = await consume([
      { id: "poisoned", attempts: 1, body: poisoned.job },
      { id: "healthy", attempts: 1, body: healthy.job },
      { id: "garbage", attempts: 1, body: { type: "compaction", nonsense: true } },
    ]);

    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["poisoned"]);
    expect(result.explicitAcks.sort()).toEqual(["garbage", "healthy"]);
    expect(result.retryBatch.retry).toBe(false);
    // Both jobs reached the model: the healthy one was not held hostage by the poisoned one.
    expect((await requestCount()) - before).toBe(2);
    expect((await runEvents(healthy)).map((e) => e.body.status)).toEqual(["planned", "failed", "completed"]);

    const failed = (await runEvents(poisoned)).filter((e) => e.body.status === "failed");
    expect(failed.map((e) => e.body.error?.code)).toEqual([TURNED_AWAY_CODE, "uncaught_syntaxerror"]);
    expect(failed[1]?.body.error?.message).toMatch(/SyntaxError/);
    expect(await compactorFailures(poisoned)).toEqual([TURNED_AWAY_CODE, "uncaught_syntaxerror"]);
    // The healthy run's only failure is its plan's own send, turned away before the batch.
    expect(await compactorFailures(healthy)).toEqual([TURNED_AWAY_CODE]);
    await settleRuns(poisoned);
  });

  it("an error thrown anywhere in a job (here: a packet whose bytes are not JSON) is that job's failed run, never the batch's", async () => {
    const broken = await openConversation();
    const healthy = await openConversation();
    const before = await requestCount();
    // A packet that verifies against its hash but is not JSON: reading it throws a SyntaxError.
    const text = "this packet is not JSON";
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)))].map((b) => b.toString(16).padStart(2, "0")).join("");
    const packetKey = `packets/broken/${broken.job.runId}.json`;
    await env.DOCUMENTS.put(packetKey, text);

    const result = await consume([
      { id: "broken", attempts: 2, body: { ...broken.job, packetKey, packetHash: digest } },
      { id: "healthy", attempts: 1, body: healthy.job },
    ]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["broken"]);
    expect(result.explicitAcks).toEqual(["healthy"]);
    expect((await requestCount()) - before).toBe(1);

    const failed = (await runEvents(broken)).filter((e) => e.body.status === "failed");
    expect(failed.map((e) => e.body.error?.code)).toEqual([TURNED_AWAY_CODE, "packet_invalid"]);
    expect(await compactorFailures(broken)).toEqual([TURNED_AWAY_CODE, "packet_invalid"]);
    expect(await compactorFailures(healthy)).toEqual([TURNED_AWAY_CODE]);
    await settleRuns(broken);
  });

  it("a reply job that throws is its agent's failed run and incident, and the compaction job beside it runs", async () => {
    const healthy = await openConversation("Summarize the slice. HEALTHY-CHAIN");
    // A message, then an agent that answers with its own model: the reply job is the test's to send.
    const conversation = freshConversation();
    const agentId = `iso-reply-${Date.now().toString(36)}-${counter++}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const posted = await json<{ event: { seq: number } }>(await call("POST", eventsPath(conversation), { token, body: sourceEvent("q1", "q1", "Which venue did we pick?") }));
    const body = pair({ agentId, sources: [conversation], profile: "fakeiso" });
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: { ...body, agent: { ...body.agent, reply: { mode: "builtin" } } } })).status).toBe(201);
    const before = await requestCount();
    // The compaction's call (its system message is the compactor's prompt) gets a valid answer;
    // the reply's (it has no system message: the agent has no documents) a body that is not JSON.
    await script([{ whenSystemIncludes: "HEALTHY-CHAIN" }, { rawBody: "<html>upstream hiccup</html>" }]);

    const replyJob: ReplyJob = { type: "reply", conversationId: conversation, agentId, sourceSeq: posted.event.seq, sourceMessageId: "q1" };
    const result = await consume([
      { id: "reply", attempts: 1, body: replyJob },
      { id: "healthy", attempts: 1, body: healthy.job },
    ]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["reply"]);
    expect(result.explicitAcks).toEqual(["healthy"]);
    expect((await requestCount()) - before).toBe(2);

    const page = await json<{ events: RunEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=500`, { token }));
    const failed = page.events.filter((e) => e.kind === "run" && e.body.status === "failed");
    expect(failed.map((e) => [e.body.runId, e.body.error?.code])).toEqual([[`reply:${agentId}:${posted.event.seq}:run`, "uncaught_syntaxerror"]]);
    expect((await readIncidents(await shardOf(conversation), conversation, 20)).map((i) => [i.kind, i.code])).toEqual([["agent_failure", "uncaught_syntaxerror"]]);
    expect((await runEvents(healthy)).map((e) => e.body.status)).toEqual(["planned", "failed", "completed"]);
  });
});

describe("a job is worth a model call only while its run is open", () => {
  it("copies of a settled run's job are acked with no model call, queue no second extraction and record nothing, even where the model would fail", async () => {
    const settled = await settledConversation();
    // Each compaction of the chain paid exactly one call.
    expect(await requestCount()).toBe(settled.paidCalls);
    const completedBefore = (await runEvents(settled)).filter((e) => e.body.status === "completed");
    expect(completedBefore).toHaveLength(1);
    // A copy that reached the model would fail there (and record `failed` after `completed`).
    await script([{ status: 500 }]);
    // What the consumer queues (an extraction after a settle) is recorded here instead of sent.
    const queued: unknown[] = [];
    const recording = {
      ...env,
      JOB_QUEUE: {
        send: async (body: unknown) => void queued.push(body),
        sendBatch: async (messages: readonly { body: unknown }[]) => void queued.push(...messages.map((m) => m.body)),
      },
    } as unknown as Env;

    // A redelivery of the message that settled it, then a copy the plan's watchdog sent (a message of its own).
    expect((await consume([{ id: "redelivered", attempts: 2, body: settled.job }], recording)).explicitAcks).toEqual(["redelivered"]);
    expect((await consume([{ id: "watchdog-copy", attempts: 1, body: settled.job }], recording)).explicitAcks).toEqual(["watchdog-copy"]);

    expect(await requestCount()).toBe(settled.paidCalls);
    expect(queued).toEqual([]);
    expect((await runEvents(settled)).map((e) => e.body.status)).toEqual(["planned", "completed"]);
    expect(await compactorFailures(settled)).toEqual([]);
  });

  it("a failure reported for a run that has settled (a stale copy's, racing the copy that settled it) writes nothing", async () => {
    const settled = await settledConversation();
    const stub = conversationStub(env, settled.conversation);
    await stub.recordFailure(settled.conversation, settled.job.runId, 1, "model_timeout", "a copy's call that outlived the settle", "late-copy");
    expect((await runEvents(settled)).map((e) => e.body.status)).toEqual(["planned", "completed"]);
    expect(await compactorFailures(settled)).toEqual([]);
  });
});

describe("every failed attempt of a run is recorded once, whichever copy of its job made it", () => {
  it("a watchdog's copy starts again at attempt 1 and still gets its own failed run and incident", async () => {
    // The plan's own send failed at its attempt 1 (turned away); the copies the watchdog sent are
    // messages of their own, numbered from attempt 1 again by the queue.
    const open = await openConversation();
    await script([{ status: 500 }, { content: "" }]);
    expect((await consume([{ id: "watchdog-copy", attempts: 1, body: open.job }])).retryMessages.map((m) => m.msgId)).toEqual(["watchdog-copy"]);
    // (A message id that is no plain token goes into the key as a digest.)
    expect((await consume([{ id: "second copy / watchdog", attempts: 1, body: open.job }])).retryMessages.map((m) => m.msgId)).toEqual(["second copy / watchdog"]);

    const failed = (await runEvents(open)).filter((e) => e.body.status === "failed");
    expect(failed.map((e) => e.body.error?.code)).toEqual([TURNED_AWAY_CODE, "model_server_error", "output_empty_output"]);
    expect(new Set(failed.map((e) => e.idempotencyKey)).size).toBe(3);
    for (const { idempotencyKey } of failed) expect(idempotencyKey).toMatch(/^run:cmp_[0-9a-f-]{36}:failed:[A-Za-z0-9_-]{1,64}:1$/);
    expect(failed.map((e) => e.body.detail?.["attempt"])).toEqual([1, 1, 1]);
    expect(await compactorFailures(open)).toEqual([TURNED_AWAY_CODE, "model_server_error", "output_empty_output"]);

    // A copy the model answers: the run completes after its failures, never the other way round.
    await settleRuns(open);
    expect((await runEvents(open)).map((e) => e.body.status)).toEqual(["planned", "failed", "failed", "failed", "completed"]);
  });
});
