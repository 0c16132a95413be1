import type { ChainAnchor, EventInput } from "./events";
import { sha256Hex } from "./hash";

/**
 * The run events a compactor's chain writes to the log: content-dark receipts of each decision
 * (skipped, planned, completed, failed). One status per run id, so a replayed write is the same
 * event (its idempotency key), never a second one; a failed attempt is keyed by its number and,
 * for a compaction, by the delivery that made it.
 */

export type CompactorRunStatus = "skipped" | "planned" | "completed" | "failed";

export interface RunExtra {
  readonly detail?: Record<string, string | number | boolean | null>;
  readonly error?: { readonly code: string; readonly message: string };
  readonly model?: string;
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number };
  readonly anchor?: ChainAnchor;
}

export function compactorRunEvent(compactorId: string, runId: string, status: CompactorRunStatus, extra: RunExtra): EventInput {
  return {
    kind: "run",
    idempotencyKey: `run:${runId}:${status}`,
    sensitive: false,
    body: { runId, agentId: compactorId, role: "compactor", status, ...extra },
  };
}

/**
 * The part of a failed attempt's key that names its delivery: the queue message's id as it is when
 * it is a plain token (Cloudflare's are hex), else a digest of it, so the key stays printable and
 * within the log's 200 characters whatever a queue calls its messages.
 */
function deliveryToken(delivery: string): string {
  return /^[A-Za-z0-9_-]{1,64}$/.test(delivery) ? delivery : sha256Hex(delivery).slice(0, 32);
}

/**
 * One failed attempt of a planned run or of an extraction (the model's error, a timeout, invalid
 * output), bounded to the log's limits. The queue numbers attempts per message, and a copy of a
 * job — the plan watchdog's re-send — is a message of its own whose attempts start at 1 again: the
 * attempt number is unique only within its `delivery` (the message's id), so a delivery, when
 * given, is part of the key, and every failed attempt of every copy is its own event.
 */
export function failedAttemptEvent(compactorId: string, runId: string, attempt: number, code: string, message: string, detail: Record<string, string | number> = {}, delivery?: string): EventInput {
  const token = delivery === undefined ? undefined : deliveryToken(delivery);
  return {
    kind: "run",
    idempotencyKey: token === undefined ? `run:${runId}:failed:${attempt}` : `run:${runId}:failed:${token}:${attempt}`,
    sensitive: false,
    body: {
      runId,
      agentId: compactorId,
      role: "compactor",
      status: "failed",
      error: { code: code.slice(0, 64), message: message.slice(0, 1_000) },
      detail: { ...detail, attempt, ...(token === undefined ? {} : { delivery: token }) },
    },
  };
}
