import type { ChainAnchor, EventInput } from "./events";

/**
 * The run events a compactor's chain writes to the log: content-dark receipts of each decision
 * (skipped, planned, completed, failed). One status per run id, so a replayed write is the same
 * event (its idempotency key), never a second one; a failed attempt is keyed by its number.
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

/** One failed attempt of a planned run or of an extraction (the model's error, a timeout, invalid output), bounded to the log's limits. */
export function failedAttemptEvent(compactorId: string, runId: string, attempt: number, code: string, message: string, detail: Record<string, string | number> = {}): EventInput {
  return {
    kind: "run",
    idempotencyKey: `run:${runId}:failed:${attempt}`,
    sensitive: false,
    body: {
      runId,
      agentId: compactorId,
      role: "compactor",
      status: "failed",
      error: { code: code.slice(0, 64), message: message.slice(0, 1_000) },
      detail: { ...detail, attempt },
    },
  };
}
