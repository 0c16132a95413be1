import type { Context } from "hono";
import type { AppError } from "../../core/errors";
import { ERROR_STATUS } from "../../core/errors";
import type { InspectorEnv } from "./types";
import { ErrorPage } from "./views/error-page";

/** A typed failure as an HTML page, with the status the API gives the same code. */
export function errorPage(c: Context<InspectorEnv>, error: AppError, signedIn: boolean) {
  const status = ERROR_STATUS[error.code];
  return c.html(<ErrorPage status={status} code={error.code} message={error.message} signedIn={signedIn} />, status);
}

/**
 * Raw JSON for the browser to show, not download (`inline`). The body is sent as given: a packet
 * is served byte for byte as stored, so what the operator sees hashes to what the plan recorded.
 */
export function inlineJson(c: Context<InspectorEnv>, text: string): Response {
  return c.body(text, 200, { "Content-Type": "application/json; charset=utf-8", "Content-Disposition": "inline" });
}
