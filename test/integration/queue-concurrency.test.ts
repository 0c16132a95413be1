import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import worker from "../../src/index";
import type { Job, ReplyJob } from "../../src/core/jobs";
import { pair } from "../support/declarations";
import { waitFor } from "../support/chain";
import { replyJobFor } from "../support/queue";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * A batch's jobs run side by side: one whose call hangs holds up none of the others (they belong to
 * other chats, whose replies would otherwise wait behind it), and a job still running at its
 * deadline is retried on its own. Nothing here is timed: the hanging call is held at the fake
 * model until the test releases it, so what the test sees meanwhile is an order, not a duration.
 *
 * The profiles "qcstuck" and "qcprompt" exist only in the environment these tests hand the
 * consumer: two sessions of this file's own on the fake model, one whose answers the test holds.
 */

const origin = new URL(inject("fakeOpenAiBaseUrl")).origin;
const stuck = `${origin}/s/queue-concurrency-stuck`;
const prompt = `${origin}/s/queue-concurrency`;
const consumerEnv = {
  ...env,
  OPENAI_API_KEY_QCSTUCK: "test-key",
  OPENAI_BASE_URL_QCSTUCK: `${stuck}/v1`,
  OPENAI_API_KEY_QCPROMPT: "test-key",
  OPENAI_BASE_URL_QCPROMPT: `${prompt}/v1`,
} as Env;

const held = async (): Promise<string[]> => (await (await fetch(`${stuck}/__held`)).json()) as string[];

beforeEach(async () => {
  for (const session of [stuck, prompt]) await fetch(`${session}/__reset`, { method: "POST" });
});

let counter = 0;

interface Asked {
  readonly conversation: string;
  readonly token: string;
  readonly job: ReplyJob;
}

/** A question posted before its agent serves the conversation: the reply job is the test's to deliver. */
async function asked(reply: Record<string, unknown>, profile = "default"): Promise<Asked> {
  const conversation = freshConversation("api:qc");
  const agentId = `qc-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  const posted = await json<{ event: { seq: number } }>(await call("POST", eventsPath(conversation), { token, body: sourceEvent("q1", "q1", "Which venue did we pick?") }));
  const base = pair({ agentId, sources: [conversation], trigger: 50_000, retain: 20_000, profile });
  expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: { agent: { ...base.agent, reply }, compactor: base.compactor } })).status).toBe(201);
  return { conversation, token, job: replyJobFor(conversation, agentId, { seq: posted.event.seq, messageId: "q1" }) };
}

/** The reply recorded for the question, if any. */
async function proposalOf({ conversation, token }: Asked): Promise<{ text: string } | undefined> {
  const page = await json<{ events: { kind: string; body: { text: string } }[] }>(await call("GET", `${eventsPath(conversation)}?limit=50`, { token }));
  return page.events.find((e) => e.kind === "proposal")?.body;
}

describe("a batch's jobs do not wait for one another", () => {
  it("replies in other chats are recorded while one reply's model call hangs, and the batch acks each message on its own", async () => {
    const hanging = await asked({ mode: "builtin" }, "qcstuck");
    const others = [await asked({ mode: "builtin" }, "qcprompt"), await asked({ mode: "builtin" }, "qcprompt")];
    await fetch(`${stuck}/__script`, { method: "POST", body: JSON.stringify([{ hold: "stuck" }]) });

    // The hanging job is first in the batch: run one after another, every other job would wait for it.
    const batch = createMessageBatch<Job>("foldline-compaction", [hanging, ...others].map((a, i) => ({ id: `reply-${i}`, timestamp: new Date(), attempts: 1, body: a.job })));
    const ctx = createExecutionContext();
    let consumed = false;
    const consuming = worker.queue(batch, consumerEnv).then(() => {
      consumed = true;
    });
    try {
      await waitFor(async () => ((await held()).length === 1 ? true : undefined), "the hanging reply's model call");
      for (const other of others) await waitFor(() => proposalOf(other), `the reply in ${other.conversation}`);
      // Both were recorded while the hanging call was still held and its batch still running.
      expect(await held()).toEqual(["stuck"]);
      expect(consumed).toBe(false);
      expect(await proposalOf(hanging)).toBeUndefined();
    } finally {
      await fetch(`${stuck}/__release`, { method: "POST", body: JSON.stringify({ hold: "stuck" }) });
    }
    await consuming;
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual(["reply-0", "reply-1", "reply-2"]);
    expect(result.retryMessages).toEqual([]);
    expect(await proposalOf(hanging)).toBeDefined();
  });

  it("runs at most five of a batch's jobs at once (a Worker holds six connections), the rest each starting as one ends", async () => {
    const jobs = [];
    for (let i = 0; i < 7; i++) jobs.push(await asked({ mode: "builtin" }, "qcstuck"));
    await fetch(`${stuck}/__script`, { method: "POST", body: JSON.stringify(jobs.map(() => ({ hold: "busy" }))) });
    const batch = createMessageBatch<Job>("foldline-compaction", jobs.map((a, i) => ({ id: `busy-${i}`, timestamp: new Date(), attempts: 1, body: a.job })));
    const ctx = createExecutionContext();
    const consuming = worker.queue(batch, consumerEnv);
    try {
      await waitFor(async () => ((await held()).length === 5 ? true : undefined), "five model calls held");
      // The other two wait for a connection; their deadlines have not started.
      for (const job of jobs.slice(0, 5)) expect(await proposalOf(job)).toBeUndefined();
      expect(await held()).toHaveLength(5);
    } finally {
      await fetch(`${stuck}/__release`, { method: "POST", body: JSON.stringify({ hold: "busy" }) });
    }
    await waitFor(async () => ((await held()).length === 2 ? true : undefined), "the last two model calls, once five ended");
    await fetch(`${stuck}/__release`, { method: "POST", body: JSON.stringify({ hold: "busy" }) });
    await consuming;
    expect((await getQueueResult(batch, ctx)).explicitAcks).toHaveLength(7);
    for (const job of jobs) expect(await proposalOf(job)).toBeDefined();
  });

  it("a job still running at its deadline (from MODEL_TIMEOUT_MS) is retried with its own backoff, and its batch returns", async () => {
    // A service bot that answers only when the test says: the job outlives any deadline until then.
    let answer: (value: { text: string }) => void = () => undefined;
    const bot = { reply: () => new Promise<{ text: string }>((resolve) => (answer = resolve)) };
    const silent = await asked({ mode: "service", binding: "QC_SILENT_BOT" });
    const configured = { ...consumerEnv, QC_SILENT_BOT: bot, MODEL_TIMEOUT_MS: "100", MODEL_MAX_RETRIES: "0", QUEUE_RETRY_BASE_SECONDS: "3" } as unknown as Env;
    // A batch of the test's own making, which keeps the delay each retry asks for.
    const decisions: { id: string; decision: string; delaySeconds?: number }[] = [];
    const message = {
      id: "silent",
      timestamp: new Date(),
      attempts: 2,
      body: silent.job,
      ack: () => void decisions.push({ id: "silent", decision: "ack" }),
      retry: (options?: { delaySeconds?: number }) => void decisions.push({ id: "silent", decision: "retry", ...options }),
    };
    const batch = { queue: "foldline-compaction", messages: [message], ackAll: () => undefined, retryAll: () => undefined } as unknown as MessageBatch<Job>;
    try {
      await worker.queue(batch, configured);
      // Attempt 2 with a base of 3 s: 6 s.
      expect(decisions).toEqual([{ id: "silent", decision: "retry", delaySeconds: 6 }]);
      // Returned at the deadline, not at the bot's own timeout: nothing of the job is recorded yet.
      const page = await json<{ events: { kind: string }[] }>(await call("GET", `${eventsPath(silent.conversation)}?limit=50`, { token: silent.token }));
      expect(page.events.map((e) => e.kind)).toEqual(["source"]);
    } finally {
      answer({ text: "late" });
    }
  });
});
