import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { conversationStub } from "../../src/durable/stub";
import type { CompactionJob, NoticeJob } from "../../src/core/jobs";
import { compactionJobSchema, noticeJobSchema } from "../../src/core/jobs";
import { waitFor } from "../support/chain";
import { register } from "../support/declarations";
import { call, eventsPath, freshConversation, sourceEvent, tokenFor } from "../integration/helpers";

/**
 * The liveness project (vitest.config.ts): the watchdog is 1 s, the stall threshold 3 s and the
 * backoff base 1 s, and the compaction queue's only consumer records the jobs and runs none, so
 * every job the object sends is lost exactly as one lost in a crash. A test runs a job only by
 * delivering it itself (`support/queue`), so what a job did is what that delivery returned.
 */

let counter = 0;

/** A conversation and an agent of its own with a small policy, registered. */
export async function setup() {
  const conversation = freshConversation("api:live");
  const agentId = `live-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
  return { conversation, agentId, token, stub: conversationStub(env, conversation) };
}

let said = 0;
export async function say(token: string, conversation: string): Promise<void> {
  const i = said++;
  const text = `Message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + (i % 50)} euros and a garden.`;
  expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, text) })).status).toBe(201);
}

/** Messages until a plan opens; its run id. */
export async function sayUntilPlanned(token: string, conversation: string, agentId: string): Promise<string> {
  const stub = conversationStub(env, conversation);
  for (let i = 0; i < 40; i++) {
    await say(token, conversation);
    const open = (await stub.describeChain(conversation, agentId))?.openRunId;
    if (typeof open === "string") return open;
  }
  throw new Error("no plan after 40 messages");
}

/** What the queue received, oldest first, once at least `atLeast` of it is `wanted`. */
async function received<T>(wanted: (job: unknown) => job is T, atLeast: number, what: string): Promise<T[]> {
  return waitFor(async () => {
    const sent = await (await env.QUEUE_RECORDER.fetch("http://queue-recorder/")).json<unknown[]>();
    const jobs = sent.filter(wanted);
    return jobs.length >= atLeast ? jobs : undefined;
  }, `${atLeast} ${what}`, 20_000);
}

/** The jobs the object sent for one plan, oldest first, once the queue has received at least `atLeast`. */
export async function sentJobs(runId: string, atLeast: number): Promise<CompactionJob[]> {
  const isPlanJob = (job: unknown): job is CompactionJob => compactionJobSchema.safeParse(job).data?.runId === runId;
  return received(isPlanJob, atLeast, `job(s) sent for ${runId}`);
}

/** The operator's notices of one kind of incident in one conversation, once at least `atLeast` were queued. */
export async function sentNotices(conversation: string, kind: string, atLeast: number): Promise<NoticeJob[]> {
  const isNotice = (job: unknown): job is NoticeJob => {
    const text = noticeJobSchema.safeParse(job).data?.text ?? "";
    return text.startsWith(`Foldline incident: ${kind} `) && text.includes(` in ${conversation}`);
  };
  return received(isNotice, atLeast, `${kind} notice(s) for ${conversation}`);
}
