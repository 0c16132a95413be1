import { FoldlineError } from "./errors.js";

/**
 * Retrying answers that say "later": 429 (a rate limiter) and 503 (`unavailable`: a storage or
 * platform call failed and the same request will succeed). Nothing else is retried: every other
 * code is an answer a retry would only repeat.
 *
 * Resending is safe because of what the API guarantees, not because of anything here: every event
 * carries the caller's idempotency key (a resent event is a replay, `duplicate: true`, never a
 * second event, even when the first attempt committed and only its answer was lost); a
 * registration, a document and a memory page are PUTs of the whole resulting state (the same body
 * twice is `unchanged`); compose, context and search only read. The one write that is none of
 * these, `DELETE` of a memory page, is never retried: had the first attempt committed, the retry
 * would answer `not_found` for a delete that worked.
 */

export interface RetryOptions {
  /** Attempts in all, the first included; 1 turns retrying off. Default 4. */
  readonly attempts?: number;
  /** The longest wait accepted between attempts, in seconds: a `Retry-After` beyond it is the caller's to honour, so the error is thrown at once. Default 60. */
  readonly maxWaitSeconds?: number;
  /** How to wait; injectable so that tests never wait on the wall clock. Default `setTimeout`. */
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface RetryPolicy {
  readonly attempts: number;
  readonly maxWaitSeconds: number;
  readonly sleep: (ms: number) => Promise<void>;
}

const DEFAULT_ATTEMPTS = 4;
const DEFAULT_MAX_WAIT_SECONDS = 60;
/** The first wait when an answer names none; it doubles with each attempt (1 s, 2 s, 4 s…). */
const FALLBACK_BASE_SECONDS = 1;

const RETRYABLE_STATUS: ReadonlySet<number> = new Set([429, 503]);

export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  const attempts = options.attempts ?? DEFAULT_ATTEMPTS;
  if (!Number.isInteger(attempts) || attempts < 1) throw new RangeError("retry.attempts must be an integer of at least 1");
  const maxWaitSeconds = options.maxWaitSeconds ?? DEFAULT_MAX_WAIT_SECONDS;
  if (!(maxWaitSeconds >= 0)) throw new RangeError("retry.maxWaitSeconds must be a number of seconds, 0 or more");
  return { attempts, maxWaitSeconds, sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))) };
}

/**
 * Seconds to wait before attempt `attempt + 1` after `error` ended attempt `attempt` (1-based), or
 * undefined when the error is final: not retryable, attempts used up, or a wait longer than the
 * policy accepts. A `Retry-After` is honoured as given, never shortened.
 */
export function retryDelaySeconds(error: unknown, attempt: number, policy: Pick<RetryPolicy, "attempts" | "maxWaitSeconds">): number | undefined {
  if (!(error instanceof FoldlineError) || error.status === undefined || !RETRYABLE_STATUS.has(error.status)) return undefined;
  if (attempt >= policy.attempts) return undefined;
  const wait = error.retryAfterSeconds ?? FALLBACK_BASE_SECONDS * 2 ** (attempt - 1);
  return wait > policy.maxWaitSeconds ? undefined : wait;
}

/** Runs `call` until it succeeds or fails for good (`retryDelaySeconds`), sleeping in between. */
export async function withRetries<T>(call: () => Promise<T>, policy: RetryPolicy): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const wait = retryDelaySeconds(error, attempt, policy);
      if (wait === undefined) throw error;
      await policy.sleep(wait * 1000);
    }
  }
}
