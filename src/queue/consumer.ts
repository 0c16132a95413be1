import { compactionRetryBaseSeconds } from "../config";
import { unrecalledMemoryRefs, validateCompactorOutput } from "../core/compactor-output";
import { packetSchema } from "../core/packet";
import { conversationStub } from "../durable/stub";
import { runCompactorModel } from "../model/compactor-model";
import { readDocument } from "../storage/document-store";
import { livePagePaths } from "../storage/memory-store";
import { latestRepair, putRepair } from "../storage/repair-store";
import type { CompactionJob } from "./jobs";
import { jobSchema } from "./jobs";
import { abandonReply, reply } from "./reply";
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
 */

const DEAD_LETTER_QUEUE = "foldline-compaction-dlq";


export async function consumeBatch(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const job = jobSchema.safeParse(message.body);
    if (!job.success) {
      console.error("dropping unrecognized queue message", { queue: batch.queue, id: message.id });
      message.ack();
      continue;
    }
    if (job.data.type === "notice") {
      const sent = await deliverText(env, { botId: job.data.botId, chatId: job.data.chatId, text: job.data.text });
      if (!sent.ok && (sent.error.kind === "rate_limited" || sent.error.kind === "unavailable") && batch.queue !== DEAD_LETTER_QUEUE) {
        message.retry({ delaySeconds: sent.error.kind === "rate_limited" ? sent.error.retryAfterSeconds : 5 });
      } else message.ack();
      continue;
    }
    if (job.data.type === "reply") {
      if (batch.queue === DEAD_LETTER_QUEUE) await abandonReply(env, job.data);
      const outcome = batch.queue === DEAD_LETTER_QUEUE ? { kind: "done" as const } : await reply(env, job.data, message.attempts);
      if (outcome.kind === "retry") message.retry({ delaySeconds: outcome.delaySeconds });
      else message.ack();
      continue;
    }
    if (batch.queue === DEAD_LETTER_QUEUE) {
      await conversationStub(env, job.data.conversationId).abandon(job.data.conversationId, job.data.runId, `retries exhausted after ${message.attempts} dead-letter attempt(s)`);
      message.ack();
      continue;
    }
    const outcome = await compact(env, job.data, message.attempts);
    if (outcome.kind === "retry") message.retry({ delaySeconds: outcome.delaySeconds });
    else message.ack();
  }
}

type Outcome = { kind: "done" } | { kind: "retry"; delaySeconds: number };

async function compact(env: Env, job: CompactionJob, attempts: number): Promise<Outcome> {
  const stub = conversationStub(env, job.conversationId);
  const failed = async (code: string, message: string, retryAfter: number | null = null): Promise<Outcome> => {
    await stub.recordFailure(job.conversationId, job.runId, attempts, code, message);
    return { kind: "retry", delaySeconds: retryDelaySeconds(compactionRetryBaseSeconds(env), attempts, retryAfter) };
  };

  const read = await readDocument(env.DOCUMENTS, job.packetKey, job.packetHash);
  if (!read.ok) return failed(`packet_${read.reason}`, `the packet ${job.packetKey} could not be verified`);
  const packet = packetSchema.safeParse(JSON.parse(read.text) as unknown);
  if (!packet.success || packet.data.runId !== job.runId || packet.data.conversationId !== job.conversationId) {
    return failed("packet_invalid", "the packet does not match its job");
  }

  // After an unusable reply, the retry tells the model what was wrong with it (a repair turn
  // recorded under the run) instead of sending the request that already failed.
  const repair = await latestRepair(env.DOCUMENTS, job.packetKey, job.runId, job.packetHash, attempts);
  const receipt = await runCompactorModel(env, packet.data, job.model, job.profile, repair);
  if (!receipt.ok) return failed(`model_${receipt.error.kind}`, receipt.error.message, receipt.error.retryAfterSeconds);
  const { text, finishReason } = receipt.value;
  // A pointer to a page recall did not find is kept when the page exists.
  const livePages = await livePagePaths(env.DB, packet.data.agentId, unrecalledMemoryRefs(packet.data, text));
  const content = validateCompactorOutput(packet.data, { text, finishReason }, livePages);
  if (!content.ok) {
    await putRepair(env.DOCUMENTS, job.packetKey, { runId: job.runId, packetHash: job.packetHash, attempt: attempts, code: content.error.code, problem: content.error.message, reply: text });
    return failed(`output_${content.error.code}`, content.error.message);
  }

  const { provider, model, responseId, usage, latencyMs } = receipt.value;
  const settled = await stub.settle(job.conversationId, job.runId, content.value, { provider, model, responseId, finishReason, usage, latencyMs });
  if (!settled.ok) console.warn("compaction result refused", { runId: job.runId, code: settled.error.code, message: settled.error.message });
  return { kind: "done" };
}
