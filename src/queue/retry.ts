import { queueRetryBaseSeconds } from "../config";

const RETRY_MAX_SECONDS = 600;

/** Exponential backoff for a failed queue attempt, never sooner than the provider's retry-after. */
export function retryDelaySeconds(baseSeconds: number, attempts: number, retryAfterSeconds: number | null): number {
  const backoff = Math.min(baseSeconds * 2 ** Math.max(0, attempts - 1), RETRY_MAX_SECONDS);
  return Math.max(backoff, Math.min(retryAfterSeconds ?? 0, RETRY_MAX_SECONDS));
}

/**
 * The delay before a job's next attempt, from its own message's `attempts`: every kind of job
 * (compactions, extractions, replies, notices, alerts) backs off from `QUEUE_RETRY_BASE_SECONDS`, each
 * message by its own count, so one message's retries never set another's pace.
 */
export function backoffSeconds(env: Env, attempts: number, retryAfterSeconds: number | null = null): number {
  return retryDelaySeconds(queueRetryBaseSeconds(env), attempts, retryAfterSeconds);
}
