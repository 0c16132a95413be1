import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import type { CompactionJob, ReplyJob } from "../../src/core/jobs";
import { shardOf } from "./shards";

/**
 * Runs the Worker's queue consumer on `bodies` as one batch of `queue` (message ids `msg-0`, `msg-1`,
 * …) and returns what it decided for each message: acked, or retried with a delay. A test that
 * sends a job itself, where the platform's queue never saw one, knows it is the only attempt: "not
 * retried" is then read from this result, not waited for.
 */
export async function deliver(queue: string, bodies: readonly unknown[], options: { readonly attempts?: number; readonly env?: Env } = {}) {
  const batch = createMessageBatch(
    queue,
    bodies.map((body, i) => ({ id: `msg-${i}`, timestamp: new Date(), attempts: options.attempts ?? 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, options.env ?? env);
  return getQueueResult(batch, ctx);
}

/** The job the object sent for a plan, rebuilt from the plan row (the packet it names is the plan's). */
export async function compactionJobFor(conversation: string, agentId: string, runId: string): Promise<CompactionJob> {
  const plan = await (await shardOf(conversation)).prepare("SELECT packet_key, packet_hash FROM compaction_plans WHERE run_id = ?").bind(runId).first<{ packet_key: string; packet_hash: string }>();
  if (plan === null) throw new Error(`no plan ${runId}`);
  return { type: "compaction", conversationId: conversation, agentId, runId, packetKey: plan.packet_key, packetHash: plan.packet_hash, model: "test-model", profile: "default" };
}

/** The reply job an append queues for an agent serving the conversation at that moment. */
export function replyJobFor(conversation: string, agentId: string, source: { readonly seq: number; readonly messageId: string }): ReplyJob {
  return { type: "reply", conversationId: conversation, agentId, sourceSeq: source.seq, sourceMessageId: source.messageId };
}
