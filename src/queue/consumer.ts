import { z } from "zod";

/**
 * Queue consumers. Messages are input from outside the request path and are validated like any
 * other: a message that is not a known job is acknowledged and logged, never retried forever.
 * Compaction jobs are added to `jobSchema` by the compaction engine.
 */
export const jobSchema = z.never();

export async function consumeBatch(batch: MessageBatch<unknown>): Promise<void> {
  for (const message of batch.messages) {
    const job = jobSchema.safeParse(message.body);
    if (!job.success) {
      console.error("dropping unrecognized queue message", { queue: batch.queue, id: message.id });
      message.ack();
      continue;
    }
  }
}
