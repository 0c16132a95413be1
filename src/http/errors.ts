import type { Context } from "hono";
import type { AppError } from "../core/errors";
import { ERROR_STATUS } from "../core/errors";
import { describeThrown } from "../core/thrown";
import { TRANSIENT_RETRY_AFTER_SECONDS, unavailableError } from "../core/transient";
import { logger } from "../logger";

/**
 * The one place a failure becomes HTTP: `{ "error": { "code", "message", ...details } }`. An
 * `unavailable` answer also says when to retry, in `Retry-After` (seconds, from its
 * `retryAfterSeconds`). Each is logged by its code and status alone: the message may quote the
 * request.
 */
export function problem(c: Context, error: AppError): Response {
  logger[ERROR_STATUS[error.code] >= 500 ? "warn" : "info"]("request.refused", { code: error.code, status: ERROR_STATUS[error.code] });
  const body = { error: { ...error.details, code: error.code, message: error.message } };
  if (error.code !== "unavailable") return c.json(body, ERROR_STATUS[error.code]);
  const wait = error.details?.["retryAfterSeconds"];
  const seconds = typeof wait === "number" && Number.isInteger(wait) && wait > 0 ? wait : TRANSIENT_RETRY_AFTER_SECONDS;
  return c.json({ error: { ...body.error, retryAfterSeconds: seconds } }, ERROR_STATUS.unavailable, { "Retry-After": String(seconds) });
}

/**
 * A thrown failure as the client's answer (`app.onError`): `503 unavailable` when a retry will fix
 * it (`core/transient`), otherwise a `500 internal`. Both are logged; a defect is never answered as
 * retryable.
 */
export function thrownProblem(c: Context, error: unknown): Response {
  const unavailable = unavailableError(error);
  if (unavailable === undefined) {
    logger.error("unhandled", { surface: "http", outcome: "internal", code: describeThrown(error).code });
    return problem(c, { code: "internal", message: "internal error; nothing was acknowledged, retrying is safe" });
  }
  logger.warn("unhandled", { surface: "http", outcome: "unavailable", code: describeThrown(error).code });
  return problem(c, unavailable);
}
