import { chunksBySize } from "./chunks";

/**
 * Cloudflare Queues takes at most 100 messages and 256 KB in one `sendBatch`, and at most 128 KB in
 * one message; a send past either is refused whole. Local Queues enforce the count only, so every
 * producer cuts what it sends here, and a job that could never fit is a bug named before any send.
 */

export const SEND_BATCH_MESSAGES = 100;
export const SEND_BATCH_BYTES = 256 * 1024;
export const MESSAGE_BYTES = 128 * 1024;
/** What a message costs beyond its body's JSON in a batch's size (its envelope): a margin, not a measure. */
const MESSAGE_OVERHEAD_BYTES = 100;

const encoder = new TextEncoder();

/** A body's size as the queue counts it, at most: its JSON in UTF-8. */
export const messageBytes = (body: unknown): number => encoder.encode(JSON.stringify(body)).length;

/** `bodies` in order, cut into batches each `sendBatch` takes. Throws for a body over one message's limit. */
export function sendBatches<T>(bodies: readonly T[]): T[][] {
  const size = (body: T) => messageBytes(body) + MESSAGE_OVERHEAD_BYTES;
  for (const body of bodies) if (size(body) > MESSAGE_BYTES) throw new Error(`a queue message of ${size(body)} bytes is over the ${MESSAGE_BYTES}-byte limit`);
  return chunksBySize(bodies, size, SEND_BATCH_BYTES, SEND_BATCH_MESSAGES);
}
