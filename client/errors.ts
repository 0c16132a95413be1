import type { ErrorCode } from "../src/core/errors.js";
import { ERROR_STATUS, isErrorCode } from "../src/core/errors.js";

/**
 * Failures the service did not describe with a problem body, so the client names them itself: a
 * 429 from a rate limiter in front of the Worker, an answer that is not Foldline's problem shape
 * (a proxy's HTML page), no answer at all, or a call the client cannot make over the transport it
 * was given.
 */
export type ClientFailureCode = "rate_limited" | "unexpected_response" | "network" | "unsupported";

/** Every code a `FoldlineError` can carry: the service's closed set (`src/core/errors.ts`), then the client's own. */
export type FoldlineErrorCode = ErrorCode | ClientFailureCode;

export interface FoldlineErrorInit {
  readonly code: FoldlineErrorCode;
  readonly message: string;
  readonly status?: number | undefined;
  readonly retryAfterSeconds?: number | undefined;
  readonly details?: Readonly<Record<string, unknown>>;
}

/**
 * One failed call, whichever transport carried it. `code` is the problem's code; `status` is the
 * HTTP status (over a binding, the status HTTP answers the same code with; undefined when no answer
 * came); `retryAfterSeconds` is what the service asked a retry to wait (`Retry-After`, or the
 * body's `retryAfterSeconds`); `details` holds the rest of the problem body (`currentSeq`,
 * `reason`, `issues`, `mismatches`…).
 */
export class FoldlineError extends Error {
  override readonly name = "FoldlineError";
  readonly code: FoldlineErrorCode;
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(init: FoldlineErrorInit) {
    super(init.message);
    this.code = init.code;
    this.status = init.status;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.details = init.details ?? {};
  }
}

/**
 * `Retry-After` in seconds: delta-seconds, or an HTTP date measured from `nowMs` (RFC 9110 §10.2.3
 * allows both). Undefined when absent or unreadable, so the caller falls back to its own backoff.
 */
export function parseRetryAfter(header: string | null | undefined, nowMs: number): number | undefined {
  const value = header?.trim() ?? "";
  if (/^\d+$/.test(value)) return Number(value);
  if (value === "") return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

const positiveSeconds = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The service's `{ code, message, …details }` (the `error` of an HTTP problem body, or of an RPC
 * answer) as an error. Undefined when the object is not that shape.
 */
function fromProblem(problem: unknown, status: number | undefined, retryAfterHeaderSeconds: number | undefined): FoldlineError | undefined {
  if (!isRecord(problem) || !isErrorCode(problem["code"]) || typeof problem["message"] !== "string") return undefined;
  const { code, message, ...details } = problem;
  return new FoldlineError({
    code,
    message,
    status: status ?? ERROR_STATUS[code],
    retryAfterSeconds: retryAfterHeaderSeconds ?? positiveSeconds(details["retryAfterSeconds"]),
    details,
  });
}

/** A non-2xx HTTP answer as an error: the problem body when it is one, else a code for the status alone. */
export function httpFailure(status: number, body: string, retryAfterHeader: string | null, nowMs: number): FoldlineError {
  const retryAfterSeconds = parseRetryAfter(retryAfterHeader, nowMs);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const problem = isRecord(parsed) ? fromProblem(parsed["error"], status, retryAfterSeconds) : undefined;
  if (problem !== undefined) return problem;
  // Not Foldline's answer (a rate limiter, a load balancer, a proxy): the status still says whether a retry may help.
  const code: FoldlineErrorCode = status === 429 ? "rate_limited" : status === ERROR_STATUS.unavailable ? "unavailable" : "unexpected_response";
  return new FoldlineError({ code, message: `HTTP ${status}${body === "" ? "" : `: ${body.slice(0, 200)}`}`, status, retryAfterSeconds });
}

/** An RPC answer's `error` as an error, with the status HTTP gives its code. */
export function rpcFailure(error: unknown): FoldlineError {
  return fromProblem(error, undefined, undefined) ?? new FoldlineError({ code: "unexpected_response", message: `not a Foldline error: ${JSON.stringify(error)}` });
}

/** A call that got no answer (refused connection, reset, timeout, a binding that threw). */
export function networkFailure(cause: unknown): FoldlineError {
  const message = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
  return new FoldlineError({ code: "network", message: `no answer from Foldline (${message})` });
}
