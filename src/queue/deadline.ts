import { modelMaxRetries, modelTimeoutMs } from "../config";

/**
 * Deadlines of the queue consumer's jobs. A job's calls each have a timeout of their own, but a
 * job as a whole has none, and the platform gives a consumer invocation 15 minutes of wall-clock
 * time: past it the whole batch is retried, the jobs that finished with it. So each job gets a
 * deadline, and one still running at it is retried on its own (its work is not stopped: a late
 * result is settled idempotently, or found settled by the retry).
 */

/** Cloudflare Queues' wall-clock limit of one consumer invocation, less a minute to answer for the batch. */
export const BATCH_BUDGET_MS = 14 * 60_000;

/**
 * How long one job may run: every try of its model call (`MODEL_TIMEOUT_MS` × (1 +
 * `MODEL_MAX_RETRIES`)) and as long again for the rest of its work (D1, the conversation's object,
 * R2, a Telegram send), within the batch's budget. Derived from config alone, so a deployment
 * that gives its model longer gives its jobs longer.
 */
export function jobDeadlineMs(env: Env): number {
  return Math.min(2 * modelTimeoutMs(env) * (modelMaxRetries(env) + 1), BATCH_BUDGET_MS);
}

export { DEADLINE_PASSED, withinDeadline } from "../core/deadline";
