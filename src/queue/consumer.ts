import { compactionRetryBaseSeconds } from "../config";
import { lacksTokenUsage } from "../core/boundary";
import { unrecalledMemoryRefs, validateCompactorOutput } from "../core/compactor-output";
import { packetSchema } from "../core/packet";
import { describeThrown } from "../core/thrown";
import { conversationStub } from "../durable/stub";
import { runCompactorModel } from "../model/compactor-model";
import { readDocument } from "../storage/document-store";
import { livePages } from "../api/served-memory";
import { conversationDb } from "../storage/shards";
import { latestRepair, putRepair } from "../storage/repair-store";
import type { CompactionJob, ExtractJob, Job } from "../core/jobs";
import { jobSchema } from "../core/jobs";
import { abandonExtraction, extract, recordExtractionFailure } from "./extract";
import { reply } from "./reply";
import { abandonReply } from "./reply-notice";
import { recordReplyFailure } from "./reply-record";
import { retryDelaySeconds } from "./retry";
import { deliverText } from "../telegram/dispatch";

/**
 * Queue consumers: the compactor runs here, off the request path, at least once.
 *
 * - A job names an immutable packet; every attempt re-reads and re-verifies the same bytes.
 * - Model errors, timeouts and invalid output are failed attempts: a failed run event and an
 *   incident (private evidence, never a chat message), then a retry with exponential backoff.
 * - After the queue's last retry the job lands in the dead-letter queue, whose consumer closes the
 *   plan; the conversation's object then backs off and re-plans from an alarm.
 * - Settling is idempotent, so a duplicated delivery yields the same boundary, never a second one.
 * - Each message is acked or retried on its own. A batch holds jobs of many conversations, and
 *   whatever one job throws (a response body that is not JSON, a binding's TypeError) is that
 *   job's failed attempt, recorded like any other; it never reaches the batch, whose failure
 *   would retry every other job with it.
 */

const DEAD_LETTER_QUEUE = "foldline-compaction-dlq";

type Outcome = { kind: "done" } | { kind: "retry"; delaySeconds: number };

export async function consumeBatch(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const deadLetter = batch.queue === DEAD_LETTER_QUEUE;
  for (const message of batch.messages) {
    const job = jobSchema.safeParse(message.body);
    if (!job.success) {
      console.error("dropping unrecognized queue message", { queue: batch.queue, id: message.id });
      message.ack();
      continue;
    }
    const outcome = await isolated(env, job.data, message.attempts, deadLetter);
    if (outcome.kind === "retry") message.retry({ delaySeconds: outcome.delaySeconds });
    else message.ack();
  }
}

/** One job's outcome; never throws. */
async function isolated(env: Env, job: Job, attempts: number, deadLetter: boolean): Promise<Outcome> {
  try {
    return await handle(env, job, attempts, deadLetter);
  } catch (error) {
    const thrown = describeThrown(error);
    console.error("queue job failed", { type: job.type, attempts, deadLetter, code: thrown.code, message: thrown.message });
    const retry: Outcome = { kind: "retry", delaySeconds: retryDelaySeconds(compactionRetryBaseSeconds(env), attempts, null) };
    try {
      // Evidence first, as for any failed attempt; a dead letter has no attempt left to record.
      if (!deadLetter && job.type === "compaction") await conversationStub(env, job.conversationId).recordFailure(job.conversationId, job.runId, attempts, thrown.code, thrown.message);
      if (!deadLetter && job.type === "reply") await recordReplyFailure(env, job, attempts, thrown.code, thrown.message);
      if (!deadLetter && job.type === "extract") await recordExtractionFailure(env, job, attempts, thrown.code, thrown.message);
    } catch (secondary) {
      // Recording failed too (the object or D1 is unavailable): the retry is the record.
      console.error("could not record a failed queue job", describeThrown(secondary));
    }
    return retry;
  }
}

async function handle(env: Env, job: Job, attempts: number, deadLetter: boolean): Promise<Outcome> {
  switch (job.type) {
    case "notice": {
      const sent = await deliverText(env, { botId: job.botId, chatId: job.chatId, text: job.text });
      if (!sent.ok && (sent.error.kind === "rate_limited" || sent.error.kind === "unavailable") && !deadLetter) {
        return { kind: "retry", delaySeconds: sent.error.kind === "rate_limited" ? sent.error.retryAfterSeconds : 5 };
      }
      return { kind: "done" };
    }
    case "reply":
      if (!deadLetter) return reply(env, job, attempts);
      await abandonReply(env, job);
      return { kind: "done" };
    case "compaction":
      if (!deadLetter) return compact(env, job, attempts);
      await conversationStub(env, job.conversationId).abandon(job.conversationId, job.runId, `retries exhausted after ${attempts} dead-letter attempt(s)`);
      return { kind: "done" };
    case "extract":
      if (!deadLetter) return extract(env, job, attempts);
      await abandonExtraction(env, job, attempts);
      return { kind: "done" };
  }
}

function parsePacket(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

async function compact(env: Env, job: CompactionJob, attempts: number): Promise<Outcome> {
  const stub = conversationStub(env, job.conversationId);
  const failed = async (code: string, message: string, retryAfter: number | null = null): Promise<Outcome> => {
    await stub.recordFailure(job.conversationId, job.runId, attempts, code, message);
    return { kind: "retry", delaySeconds: retryDelaySeconds(compactionRetryBaseSeconds(env), attempts, retryAfter) };
  };

  const read = await readDocument(env.DOCUMENTS, job.packetKey, job.packetHash);
  if (!read.ok) return failed(`packet_${read.reason}`, `the packet ${job.packetKey} could not be verified`);
  const packet = packetSchema.safeParse(parsePacket(read.text));
  if (!packet.success || packet.data.runId !== job.runId || packet.data.conversationId !== job.conversationId) {
    return failed("packet_invalid", "the packet does not match its job");
  }

  // After an unusable reply, the retry tells the model what was wrong with it (a repair turn
  // recorded under the run) instead of sending the request that already failed.
  const repair = await latestRepair(env.DOCUMENTS, job.packetKey, job.runId, job.packetHash, attempts);
  const receipt = await runCompactorModel(env, packet.data, job.model, job.profile, repair);
  if (!receipt.ok) return failed(`model_${receipt.error.kind}`, receipt.error.message, receipt.error.retryAfterSeconds);
  if (lacksTokenUsage(receipt.value)) return failed("model_evidence_missing", "the provider's reply reported no token usage, which a boundary's receipt must carry");
  const { text, finishReason } = receipt.value;
  // A pointer to a page recall did not find is kept when the page exists.
  const compaction = { agentId: packet.data.agentId, conversationId: job.conversationId };
  const named = await livePages({ control: env.DB, shard: await conversationDb(env, job.conversationId) }, compaction, unrecalledMemoryRefs(packet.data, text));
  const content = validateCompactorOutput(packet.data, { text, finishReason }, named);
  if (!content.ok) {
    await putRepair(env.DOCUMENTS, job.packetKey, { runId: job.runId, packetHash: job.packetHash, attempt: attempts, code: content.error.code, problem: content.error.message, reply: text });
    return failed(`output_${content.error.code}`, content.error.message);
  }

  const { provider, model, responseId, usage, latencyMs } = receipt.value;
  const settled = await stub.settle(job.conversationId, job.runId, content.value, { provider, model, responseId, finishReason, usage, latencyMs });
  if (!settled.ok) {
    console.warn("compaction result refused", { runId: job.runId, code: settled.error.code, message: settled.error.message });
    return { kind: "done" };
  }
  // Sent after settling, from here: a send that fails retries this job, whose settle returns the
  // same boundary, so the extraction is queued at least once and never before its boundary exists.
  const extraction: ExtractJob = { type: "extract", conversationId: job.conversationId, agentId: job.agentId, compactorId: packet.data.compactorId, runId: job.runId, boundaryId: settled.value.body.id, model: job.model, profile: job.profile };
  await env.JOB_QUEUE.send(extraction);
  return { kind: "done" };
}
