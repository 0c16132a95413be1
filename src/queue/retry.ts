const RETRY_MAX_SECONDS = 600;

/** Exponential backoff for a failed queue attempt, never sooner than the provider's retry-after. */
export function retryDelaySeconds(baseSeconds: number, attempts: number, retryAfterSeconds: number | null): number {
  const backoff = Math.min(baseSeconds * 2 ** Math.max(0, attempts - 1), RETRY_MAX_SECONDS);
  return Math.max(backoff, Math.min(retryAfterSeconds ?? 0, RETRY_MAX_SECONDS));
}
