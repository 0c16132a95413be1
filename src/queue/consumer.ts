import { unrecalledMemoryRefs, validateCompactorOutput } from "../core/compactor-output";
import { opsText } from "../core/ops-text";
import { concurrencyLimit } from "../core/concurrency";
import { describeThrown } from "../core/thrown";
import { logger } from "../logger";
import { conversationStub } from "../durable/stub";
import { runCompactorModel } from "../model/compactor-model";
import { readPacket } from "../storage/r2/documents";
import { livePages } from "../storage/served-memory";
import { shardDatabaseOf } from "../storage/shards";
import { latestRepair, putRepair } from "../storage/r2/repairs";
import type { CompactionJob, ExtractJob, Job } from "../core/jobs";
import { jobSchema, MAX_PLAN_ATTEMPTS } from "../core/jobs";
import { BATCH_BUDGET_MS, DEADLINE_PASSED, jobDeadlineMs, withinDeadline } from "./deadline";
import { abandonAlert, deliverAlert } from "./alert";
import { abandonExtraction, extract, recordExtractionFailure } from "./extract";
import { reply } from "./reply";
import { abandonReply } from "./reply-notice";
import { recordReplyFailure } from "./reply-record";
import { backoffSeconds } from "./retry";
import { deliverText } from "../telegram/dispatch";

/**
 * Queue consumers: the compactor runs here, off the request path, at least once.
 *
 * - A job names an immutable packet; every attempt re-reads and re-verifies the same bytes.
 * - A compaction job is worth a model call only while its run is open: a copy of the job of a run
 *   that settled (completed, abandoned, or no longer its chain's plan) — a redelivery, or the plan
 *   watchdog's re-send — is acked without one and writes nothing.
 * - Model errors, timeouts and invalid output are failed attempts: a failed run event and an
 *   incident (private evidence, never a chat message), then a retry with exponential backoff.
 *   Attempts are numbered per queue message, so a failed attempt is recorded under its message's
 *   id too: a watchdog's copy, whose attempts start at 1 again, never overwrites another's.
 * - After the queue's last retry the job lands in the dead-letter queue, whose consumer closes the
 *   plan; the conversation's object then backs off and re-plans from an alarm.
 * - Settling is idempotent, so a copy that raced another to the model yields the same boundary,
 *   never a second one.
 * - A settled boundary's extraction is handed off at least once: the consumer sends its job once,
 *   and the conversation's object keeps it owed from before the boundary was stored until the
 *   extraction is seen, sending it again when it is not (`durable/extraction-watch`). So a failed
 *   hand-off is neither a retry of the compaction nor an incident.
 * - A batch holds jobs of many conversations and they run side by side, five at a time (the
 *   connections an invocation may hold open: `JOBS_AT_ONCE`); only a conversation's replies, and
 *   one chat's notices, wait for the one before them (that is the order their chat reads them in).
 *   Each job has a deadline (`deadline.ts`), counted from when it starts, and one still running at
 *   it is retried on its own.
 * - Each message is acked or retried on its own. Whatever one job throws (a response body that is
 *   not JSON, a binding's TypeError) is that job's failed attempt, recorded like any other; it
 *   never reaches the batch, whose failure would retry every other job with it.
 */

/** What a compaction's model call cost, for its job's log line. */
interface Spent {
  readonly modelMs?: number | undefined;
  readonly inputTokens?: number | undefined;
  readonly outputTokens?: number | undefined;
}

type Outcome = { kind: "done"; spent?: Spent } | { kind: "retry"; delaySeconds: number; spent?: Spent };

/** One delivery of a job: its queue message's id, how many times it was delivered, and when it was sent (epoch ms). */
interface Delivery {
  readonly id: string;
  readonly attempts: number;
  readonly sentAt: number;
}

/**
 * Jobs of one batch that run at once. A Worker invocation holds at most six outgoing connections
 * open; a job beyond them would wait for one with its deadline running, pass it, be retried and pay
 * its model again. Five leave one for the batch's own calls; a job's deadline starts with it.
 */
const JOBS_AT_ONCE = 5;

export async function consumeBatch(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  // wrangler.toml names each dead-letter queue once for the platform and once for this code
  // (`JOB_DEAD_LETTER_QUEUE`, `REPLY_DEAD_LETTER_QUEUE`). Both queues carry jobs of any type this
  // consumer runs alike: which queue a job is sent to decides only what it may wait behind.
  const deadLetter = batch.queue === env.JOB_DEAD_LETTER_QUEUE || batch.queue === env.REPLY_DEAD_LETTER_QUEUE;
  const budgetEnd = Date.now() + BATCH_BUDGET_MS;
  const lanes = new Map<string, Promise<unknown>>();
  const slot = concurrencyLimit(JOBS_AT_ONCE);
  const outcomes = batch.messages.map((message): Promise<Outcome> => {
    const job = jobSchema.safeParse(message.body);
    if (!job.success) {
      logger.error("job.dropped", { deadLetter });
      return Promise.resolve({ kind: "done" });
    }
    const delivery: Delivery = { id: message.id, attempts: message.attempts, sentAt: message.timestamp.getTime() };
    const lane = laneOf(job.data);
    const before = lane === undefined ? undefined : lanes.get(lane);
    const run = (before ?? Promise.resolve()).then(() => slot(() => bounded(env, job.data, delivery, deadLetter, Math.min(jobDeadlineMs(env), budgetEnd - Date.now()))));
    if (lane !== undefined) lanes.set(lane, run);
    return run;
  });
  // In the batch's order, each as soon as it and the ones before it are done.
  for (const [index, message] of batch.messages.entries()) {
    const outcome = await (outcomes[index] ?? Promise.resolve<Outcome>({ kind: "done" }));
    if (outcome.kind === "retry") message.retry({ delaySeconds: outcome.delaySeconds });
    else message.ack();
  }
}

/**
 * The jobs that must keep their order share a lane and run one after another: a conversation's
 * replies (answers to a burst arrive in the order it was asked) and the notices to one chat.
 * Compactions, extractions and alerts run at once: each has its own run or incident, and the object
 * serializes writes.
 */
function laneOf(job: Job): string | undefined {
  switch (job.type) {
    case "reply":
      return `reply:${job.conversationId}`;
    case "notice":
      return `notice:${job.botId}:${job.chatId}`;
    case "compaction":
    case "extract":
    case "alert":
      return undefined;
  }
}

/** What a job's log lines say about it: its type and ids (a notice's chat and text are neither). */
function jobFields(job: Job) {
  if (job.type === "notice") return { job: job.type };
  if (job.type === "alert") return { job: job.type, conversationId: job.conversationId, agentId: job.agentId ?? undefined, runId: job.runId ?? undefined };
  return { job: job.type, conversationId: job.conversationId, agentId: job.agentId, runId: job.type === "reply" ? undefined : job.runId };
}

/**
 * One job within its deadline; never throws. A job still running at it is retried with its
 * message's backoff (its work goes on, and logs its own end when it finishes).
 */
async function bounded(env: Env, job: Job, delivery: Delivery, deadLetter: boolean, deadlineMs: number): Promise<Outcome> {
  const retry = { kind: "retry", delaySeconds: backoffSeconds(env, delivery.attempts) } as const;
  if (deadlineMs <= 0) return retry;
  const started = Date.now();
  const logged = { ...jobFields(job), attempts: delivery.attempts, deadLetter };
  logger.info("job.start", { ...logged, queueWaitMs: Math.max(0, started - delivery.sentAt) });
  const outcome = await withinDeadline(isolated(env, job, delivery, deadLetter, started), deadlineMs);
  if (outcome !== DEADLINE_PASSED) return outcome;
  logger.error("job.end", { ...logged, outcome: "deadline", retryInSeconds: retry.delaySeconds, ms: Date.now() - started });
  return retry;
}

/** One job's outcome; never throws. */
async function isolated(env: Env, job: Job, delivery: Delivery, deadLetter: boolean, started: number): Promise<Outcome> {
  const { attempts } = delivery;
  const logged = { ...jobFields(job), attempts, deadLetter };
  try {
    const outcome = await handle(env, job, delivery, deadLetter);
    const retryInSeconds = outcome.kind === "retry" ? outcome.delaySeconds : undefined;
    logger.info("job.end", { ...logged, outcome: outcome.kind, retryInSeconds, ms: Date.now() - started, ...outcome.spent });
    return outcome;
  } catch (error) {
    const thrown = describeThrown(error);
    const retry = { kind: "retry", delaySeconds: backoffSeconds(env, attempts) } as const;
    logger.error("job.end", { ...logged, outcome: "failed", code: thrown.code, retryInSeconds: retry.delaySeconds, ms: Date.now() - started });
    try {
      // Evidence first, as for any failed attempt; a dead letter has no attempt left to record.
      if (!deadLetter && job.type === "compaction") await conversationStub(env, job.conversationId).recordFailure(job.conversationId, job.runId, attempts, thrown.code, thrown.message, delivery.id);
      if (!deadLetter && job.type === "reply") await recordReplyFailure(env, job, attempts, thrown.code, thrown.message);
      if (!deadLetter && job.type === "extract") await recordExtractionFailure(env, job, attempts, thrown.code, thrown.message);
    } catch (secondary) {
      // Recording failed too (the object or D1 is unavailable): the retry is the record.
      logger.error("step.failed", { step: "record_job_failure", ...jobFields(job), code: describeThrown(secondary).code });
    }
    return retry;
  }
}

async function handle(env: Env, job: Job, delivery: Delivery, deadLetter: boolean): Promise<Outcome> {
  const { attempts } = delivery;
  switch (job.type) {
    case "notice": {
      const sent = await deliverText(env, { botId: job.botId, chatId: job.chatId, text: job.text });
      if (!sent.ok && (sent.error.kind === "rate_limited" || sent.error.kind === "unavailable") && !deadLetter) {
        return { kind: "retry", delaySeconds: backoffSeconds(env, attempts, sent.error.kind === "rate_limited" ? sent.error.retryAfterSeconds : null) };
      }
      return { kind: "done" };
    }
    case "reply":
      if (!deadLetter) return reply(env, job, attempts);
      await abandonReply(env, job, attempts);
      return { kind: "done" };
    case "compaction":
      if (!deadLetter) return compact(env, job, delivery);
      await conversationStub(env, job.conversationId).abandon(job.conversationId, job.runId, opsText`retries exhausted after ${attempts} dead-letter attempt(s)`);
      return { kind: "done" };
    case "extract":
      if (!deadLetter) return extract(env, job, attempts);
      await abandonExtraction(env, job, attempts);
      return { kind: "done" };
    case "alert":
      return deadLetter ? abandonAlert(job, attempts) : deliverAlert(env, job, attempts);
  }
}

async function compact(env: Env, job: CompactionJob, delivery: Delivery): Promise<Outcome> {
  const { attempts } = delivery;
  const stub = conversationStub(env, job.conversationId);
  // Asked before anything that could pay or write: a settled run's copy is acked as it is, and a
  // plan whose attempts are spent (by this job or the watchdog's copies of it) is closed, backing off.
  const state = await stub.runState(job.conversationId, job.runId);
  if (!state.open) {
    if (state.reason === "attempts_exhausted") await stub.abandon(job.conversationId, job.runId, opsText`model attempts exhausted: the plan failed ${MAX_PLAN_ATTEMPTS} times`);
    return { kind: "done" };
  }
  let spent: Spent = {};
  const failed = async (code: string, message: string, retryAfter: number | null = null): Promise<Outcome> => {
    await stub.recordFailure(job.conversationId, job.runId, attempts, code, message, delivery.id);
    return { kind: "retry", delaySeconds: backoffSeconds(env, attempts, retryAfter), spent };
  };

  const read = await readPacket(env.DOCUMENTS, job.packetKey, job.packetHash);
  if (!read.ok && read.reason !== "invalid") return failed(`packet_${read.reason}`, `the packet ${job.packetKey} could not be verified`);
  if (!read.ok || read.packet.runId !== job.runId || read.packet.conversationId !== job.conversationId) {
    return failed("packet_invalid", "the packet does not match its job");
  }
  const { packet } = read;

  // After an unusable reply, the retry tells the model what was wrong with it (a repair turn
  // recorded under the run) instead of sending the request that already failed.
  const repair = await latestRepair(env.DOCUMENTS, job.packetKey, job.runId, job.packetHash, attempts);
  const receipt = await runCompactorModel(env, packet, job.model, job.profile, repair);
  if (!receipt.ok) return failed(`model_${receipt.error.kind}`, receipt.error.message, receipt.error.retryAfterSeconds);
  spent = { modelMs: receipt.value.latencyMs, inputTokens: receipt.value.usage?.inputTokens, outputTokens: receipt.value.usage?.outputTokens };
  // A provider that reports no token usage (several OpenAI-compatible servers do not) is not a
  // failure: the receipt, and the boundary, say `usage: null`, unknown.
  const { text, finishReason } = receipt.value;
  // A pointer to a page recall did not find is kept when the page exists.
  const compaction = { agentId: packet.agentId, conversationId: job.conversationId };
  const named = await livePages({ control: env.DB, shard: await shardDatabaseOf(env, job.conversationId) }, compaction, unrecalledMemoryRefs(packet, text));
  const content = validateCompactorOutput(packet, { text, finishReason }, named);
  if (!content.ok) {
    await putRepair(env.DOCUMENTS, job.packetKey, { runId: job.runId, packetHash: job.packetHash, attempt: attempts, code: content.error.code, problem: content.error.message, reply: text });
    return failed(`output_${content.error.code}`, content.error.message);
  }

  const { provider, model, responseId, usage, latencyMs } = receipt.value;
  const settling = Date.now();
  // The packet as read here: settlement checks it against its plan's hash instead of reading it again.
  const settled = await stub.settle(job.conversationId, job.runId, content.value, { provider, model, responseId, finishReason, usage, latencyMs }, read.text);
  const settlement = { conversationId: job.conversationId, agentId: job.agentId, runId: job.runId, ms: Date.now() - settling };
  if (!settled.ok) {
    logger.warn("settlement", { ...settlement, outcome: "refused", code: settled.error.code });
    return { kind: "done", spent };
  }
  logger.info("settlement", { ...settlement, outcome: "settled", seq: settled.value.body.coveredThrough.seq });
  const extraction: ExtractJob = { type: "extract", conversationId: job.conversationId, agentId: job.agentId, compactorId: packet.compactorId, runId: job.runId, boundaryId: settled.value.body.id, model: job.model, profile: job.profile };
  await handOff(env, extraction);
  return { kind: "done", spent };
}

/**
 * Queues the extraction of a boundary this delivery settled, after settling, so it never runs
 * before its boundary exists. A send that fails says nothing to anyone: it may have queued the
 * job and lost only its answer, and either way the object that settled the boundary already keeps
 * the extraction owed and sends it again unless it is seen (`durable/extraction-watch`). An
 * incident here would be false when the message was queued, and is the object's to raise when
 * its own sends keep failing.
 */
async function handOff(env: Env, extraction: ExtractJob): Promise<void> {
  try {
    await env.JOB_QUEUE.send(extraction);
  } catch (error) {
    logger.warn("step.failed", { step: "extraction_handoff", conversationId: extraction.conversationId, agentId: extraction.agentId, runId: extraction.runId, code: describeThrown(error).code });
  }
}
