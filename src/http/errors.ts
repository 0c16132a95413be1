import type { Context } from "hono";
import type { AppError } from "../core/errors";
import { ERROR_STATUS } from "../core/errors";

/** The one place a failure becomes HTTP: `{ "error": { "code", "message", ...details } }`. */
export function problem(c: Context, error: AppError): Response {
  return c.json({ error: { ...error.details, code: error.code, message: error.message } }, ERROR_STATUS[error.code]);
}
