import type { AppError } from "../core/errors";
import { renderEnvelope } from "../core/render";

/**
 * What a tool call answers, as MCP's `CallToolResult` (text content only). A value the service
 * read is data derived from history (turns, summaries, memory, and the ids and hashes beside them),
 * so it reaches the model exactly as the memory envelope does: one user-facing text in the fixed
 * `<untrusted-history-summary kind="memory">` frame that says it is data, not instructions, with
 * the body escaped (`renderEnvelope`). The body is the operation's answer as JSON, the same value
 * the REST route answers: strings are JSON literals, so no text from history can start a line of
 * its own, close the frame or open a new one. No `structuredContent`: a client that handed it to a
 * model would hand it history outside the frame.
 *
 * A refusal is the service's own words, not history: `{ "error": { code, message, ...details } }`,
 * the REST error body, as text and as `structuredContent`, with `isError`.
 */

export interface ToolResult {
  readonly [key: string]: unknown;
  readonly content: { readonly type: "text"; readonly text: string }[];
  readonly structuredContent?: { readonly [key: string]: unknown };
  readonly isError?: boolean;
}

/**
 * Line breaks JSON leaves as they are inside a string (it escapes every control character below
 * U+0020, which holds the rest of core/line-breaks.ts' set): NEL and the line and paragraph
 * separators, which some readers end a line at.
 */
const UNESCAPED_BREAKS = /[\u0085\u2028\u2029]/g;

/** The value as one line of JSON: every line break inside a string escaped, as JSON allows. */
function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(UNESCAPED_BREAKS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** An operation's answer, in the memory envelope. */
export function dataResult(value: unknown): ToolResult {
  return { content: [{ type: "text", text: renderEnvelope("memory", jsonLine(value)).content }] };
}

/** A refusal: the REST error body, typed by its code. */
export function errorResult(error: AppError): ToolResult {
  const body = { error: { ...error.details, code: error.code, message: error.message } };
  return { content: [{ type: "text", text: jsonLine(body) }], structuredContent: body, isError: true };
}
