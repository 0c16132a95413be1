import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { CompactionJob, ExtractJob } from "../../src/core/jobs";
import { compactionJobSchema, extractJobSchema } from "../../src/core/jobs";
import { wakeKey } from "../../src/core/wakeups";
import { conversationStub } from "../../src/durable/stub";
import { register } from "../support/declarations";
import { extractionRuns } from "../support/extraction";
import { deliver } from "../support/queue";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, sourceEvent, tokenFor } from "./helpers";
import { changeObjectEnv } from "./seams-faults";
import { incidentRows } from "../support/incidents";

/**
 * The hand-off of a settled boundary's extraction is at least once, and honest about it: the
 * queue send that follows a settle may throw, hang (its deadline passes: the timeout's error, at
 * once) or lose its answer after the message was queued, and in every case the delivery is acked
 * with no incident, the conversation's object keeps the extraction owed, and once its grace has
 * passed its own deadline sends the job again, unless the extraction was seen. Only re-sends that
 * keep failing raise an incident, exactly one. Nothing here waits on the clock: the grace
 * "passes" by moving the object's stored deadline to now and running its alarm
 * (`runDurableObjectAlarm`), and every job is delivered by the test (`support/queue`).
 */

const COMPACTION_QUEUE = "foldline-compaction";
type Failure = "throw" | "hang" | "lost_response";

/** The platform's wording for a queue send that failed, and one whose deadline passed. */
const QUEUE_ERRORS: Record<Failure, string> = {
  throw: "Queue send failed: internal error",
  hang: "Queue send failed: the operation timed out",
  lost_response: "Queue send failed: internal error",
};

/**
 * A queue producer that keeps what it took, and fails extraction sends as the test says: the next
 * ones (`failNext`), or every one while `failing` is set. A lost response keeps the message, then throws.
 */
class Producer {
  readonly taken: unknown[] = [];
  readonly failNext: Failure[] = [];
  failing: Failure | undefined;
  failed = 0;

  readonly binding = {
    send: async (body: unknown) => this.#send(body),
    sendBatch: async (messages: Iterable<{ body: unknown }>) => {
      for (const message of messages) await this.#send(message.body);
    },
  } as unknown as Env["JOB_QUEUE"];

  async #send(body: unknown): Promise<void> {
    const failure = extractJobSchema.safeParse(body).success ? (this.failNext.shift() ?? this.failing) : undefined;
    if (failure === undefined || failure === "lost_response") this.taken.push(body);
    if (failure === undefined) return;
    this.failed += 1;
    throw new Error(QUEUE_ERRORS[failure]);
  }

  extractJobs(): ExtractJob[] {
    return this.taken.flatMap((body) => extractJobSchema.safeParse(body).data ?? []);
  }
}

let said = 0;
const text = (i: number): string => `Message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + (i % 50)} euros and a garden.`;

/**
 * A conversation whose object sends its jobs to `objectQueue` (so nothing but the test runs them),
 * an agent with a small policy, and its first plan open; the plan's compaction job as the object sent it.
 */
async function planned() {
  const conversation = freshConversation("api:extraction-handoff");
  const agentId = `handoff-${crypto.randomUUID().slice(0, 8)}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
  const objectQueue = new Producer();
  await changeObjectEnv(conversation, (objectEnv) => ({ ...objectEnv, JOB_QUEUE: objectQueue.binding }));
  const stub = conversationStub(env, conversation);
  for (let i = 0; i < 40; i++) {
    const n = said++;
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${n}`, `${n}`, text(n)) })).status).toBe(201);
    const runId = (await stub.describeChain(conversation, agentId))?.openRunId;
    if (typeof runId !== "string") continue;
    const job = objectQueue.taken.flatMap((body) => compactionJobSchema.safeParse(body).data ?? []).find((j) => j.runId === runId);
    if (job === undefined) throw new Error(`the object sent no job for ${runId}`);
    const extraction: ExtractJob = { type: "extract", conversationId: conversation, agentId, compactorId: `${agentId}.compactor`, runId, boundaryId: `bnd_${runId.replace(/^cmp_/, "")}`, model: job.model, profile: job.profile };
    return { conversation, agentId, stub, objectQueue, job, extraction };
  }
  throw new Error("no plan after 40 messages");
}

/** The compaction job delivered once to the Worker's consumer, whose own queue producer is `handOff`. */
async function settle(job: CompactionJob, handOff: Producer) {
  return deliver(COMPACTION_QUEUE, [job], { env: { ...env, JOB_QUEUE: handOff.binding } });
}

/**
 * The extraction's grace passes: the object's deadline for it is moved to now, and its alarm runs.
 * False when the object holds no deadline for it (nothing is owed).
 */
async function gracePasses(stub: ReturnType<typeof conversationStub>, runId: string): Promise<boolean> {
  const key = wakeKey.extraction(runId);
  const moved = await runInDurableObject(stub, async (_instance, state) => {
    const wake = await state.storage.get<Record<string, unknown>>(key);
    if (wake === undefined) return false;
    await state.storage.put(key, { ...wake, at: Date.now() - 1 });
    return true;
  });
  if (moved) await runDurableObjectAlarm(stub);
  return moved;
}

async function owedDeadline(stub: ReturnType<typeof conversationStub>, runId: string): Promise<unknown> {
  return runInDurableObject(stub, (_instance, state) => state.storage.get(wakeKey.extraction(runId)));
}

/** The versions of each extracted page of the conversation: a duplicate extraction would add some. */
async function pageVersions(conversation: string): Promise<{ path: string; versions: number }[]> {
  const { results } = await (await shardOf(conversation))
    .prepare("SELECT path, COUNT(*) AS versions FROM conversation_memory_versions WHERE conversation_id = ? GROUP BY path ORDER BY path")
    .bind(conversation)
    .all<{ path: string; versions: number }>();
  return results;
}

const extractionRunId = (runId: string): string => runId.replace(/^cmp_/, "ext_");

describe("the extraction hand-off after a settle", () => {
  for (const failure of ["throw", "hang"] as const) {
    it(`a send that fails once (${failure}) is acked with no incident, and the object sends the extraction again once its grace has passed`, async () => {
      const { conversation, stub, objectQueue, job, extraction } = await planned();
      const handOff = new Producer();
      handOff.failNext.push(failure);
      const settled = await settle(job, handOff);
      expect(settled.explicitAcks).toEqual(["msg-0"]);
      expect(settled.retryMessages).toEqual([]);
      expect(handOff.failed).toBe(1);
      expect(handOff.extractJobs()).toEqual([]);
      // Settled, and nothing to tell anyone yet: the extraction is owed, and the object keeps it so.
      expect((await (await shardOf(conversation)).prepare("SELECT id FROM boundaries WHERE run_id = ?").bind(job.runId).first<{ id: string }>())?.id).toBe(extraction.boundaryId);
      expect(await incidentRows(conversation)).toEqual([]);
      expect(await owedDeadline(stub, job.runId)).toMatchObject({ kind: "extraction" });

      // The grace passes with the extraction unseen: the object's own deadline sends it again.
      expect(await gracePasses(stub, job.runId)).toBe(true);
      expect(objectQueue.extractJobs()).toEqual([extraction]);
      const ran = await deliver(COMPACTION_QUEUE, [extraction]);
      expect(ran.explicitAcks).toEqual(["msg-0"]);
      expect((await extractionRuns(conversation)).map((r) => [r.run_id, r.boundary_id])).toEqual([[extractionRunId(job.runId), extraction.boundaryId]]);

      // Seen done: the next firing lets it go, and sends nothing.
      expect(await gracePasses(stub, job.runId)).toBe(true);
      expect(await owedDeadline(stub, job.runId)).toBeUndefined();
      expect(objectQueue.extractJobs()).toEqual([extraction]);
      expect(await incidentRows(conversation)).toEqual([]);
    });
  }

  it("a send whose answer was lost after the message was queued raises nothing; a re-send that crosses it is harmless", async () => {
    const { conversation, stub, objectQueue, job, extraction } = await planned();
    const handOff = new Producer();
    handOff.failNext.push("lost_response");
    const settled = await settle(job, handOff);
    expect(settled.explicitAcks).toEqual(["msg-0"]);
    expect(settled.retryMessages).toEqual([]);
    // The queue took it; the consumer could not know, and says nothing false.
    expect(handOff.extractJobs()).toEqual([extraction]);
    expect(await incidentRows(conversation)).toEqual([]);

    // The queued copy has not run when the grace passes (a backlog): the object sends another.
    expect(await gracePasses(stub, job.runId)).toBe(true);
    expect(objectQueue.extractJobs()).toEqual([extraction]);
    // Both copies run, side by side in one batch: one extraction, no page written twice.
    const ran = await deliver(COMPACTION_QUEUE, [...handOff.extractJobs(), ...objectQueue.extractJobs()]);
    expect(ran.explicitAcks.sort()).toEqual(["msg-0", "msg-1"]);
    expect(ran.retryMessages).toEqual([]);
    expect((await extractionRuns(conversation)).map((r) => r.run_id)).toEqual([extractionRunId(job.runId)]);
    expect((await pageVersions(conversation)).filter((p) => p.versions > 1)).toEqual([]);

    expect(await gracePasses(stub, job.runId)).toBe(true);
    expect(await owedDeadline(stub, job.runId)).toBeUndefined();
    expect(objectQueue.extractJobs()).toHaveLength(1);
    expect(await incidentRows(conversation)).toEqual([]);
  });

  it("a lost answer whose queued copy ran before the grace passed is never sent again", async () => {
    const { conversation, stub, objectQueue, job } = await planned();
    const handOff = new Producer();
    handOff.failNext.push("lost_response");
    expect((await settle(job, handOff)).explicitAcks).toEqual(["msg-0"]);
    expect((await deliver(COMPACTION_QUEUE, handOff.extractJobs())).explicitAcks).toEqual(["msg-0"]);
    expect(await extractionRuns(conversation)).toHaveLength(1);

    expect(await gracePasses(stub, job.runId)).toBe(true);
    expect(await owedDeadline(stub, job.runId)).toBeUndefined();
    expect(objectQueue.extractJobs()).toEqual([]);
    expect(await incidentRows(conversation)).toEqual([]);
  });

  it("re-sends that keep failing are one incident counting them, closed once a re-send goes through and the extraction runs", async () => {
    const { conversation, agentId, stub, objectQueue, job, extraction } = await planned();
    const handOff = new Producer();
    handOff.failNext.push("throw");
    expect((await settle(job, handOff)).explicitAcks).toEqual(["msg-0"]);
    objectQueue.failing = "throw";
    for (let i = 0; i < 5; i++) expect(await gracePasses(stub, job.runId)).toBe(true);
    // Every firing tried, and every one failed: the deadline is kept, and one open incident counts them.
    expect(objectQueue.failed).toBeGreaterThanOrEqual(5);
    expect(await incidentRows(conversation)).toEqual([{ agent_id: agentId, run_id: extractionRunId(job.runId), kind: "wake_failure", code: "extraction", count: objectQueue.failed, open: 1 }]);
    expect(await owedDeadline(stub, job.runId)).toMatchObject({ kind: "extraction" });

    // The queue takes messages again: the next firing sends the job and the incident closes.
    objectQueue.failing = undefined;
    expect(await gracePasses(stub, job.runId)).toBe(true);
    expect(objectQueue.extractJobs()).toEqual([extraction]);
    expect((await incidentRows(conversation)).map((r) => [r.kind, r.open])).toEqual([["wake_failure", 0]]);
    expect((await deliver(COMPACTION_QUEUE, [extraction])).explicitAcks).toEqual(["msg-0"]);
    expect(await extractionRuns(conversation)).toHaveLength(1);
    expect(await gracePasses(stub, job.runId)).toBe(true);
    expect(await owedDeadline(stub, job.runId)).toBeUndefined();
    expect(await incidentRows(conversation)).toHaveLength(1);
  });
});
