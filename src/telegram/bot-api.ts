import { z } from "zod";
import { telegramApiBaseUrl, telegramBotToken } from "../config";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";

/**
 * A minimal Bot API client: `POST <TELEGRAM_API_BASE_URL>/bot<token>/<method>` with a JSON body,
 * and the answer narrowed to what Foldline reads. It holds no business rules: what to retry, what
 * to record and what to send at all is the dispatcher's decision. Each failure is a tagged value a
 * caller can switch on:
 *
 * - `rate_limited` (429): Telegram says how long to wait in `parameters.retry_after`;
 * - `forbidden` (403): the bot was blocked, kicked, or may not write there — retrying cannot help;
 * - `rejected` (any other 4xx): the request itself is wrong (a deleted chat, a text too long…);
 * - `unavailable` (5xx, a network failure, a timeout, an answer that is not the Bot API's): the
 *   message may or may not have been sent;
 * - `not_sent`: refused before any request (no token, no usable base URL): certainly not sent.
 *
 * The token is a bearer credential inside the URL path, so it is never logged and is scrubbed from
 * every description this module returns.
 */

export type SendFailure =
  | { readonly kind: "rate_limited"; readonly retryAfterSeconds: number; readonly description: string }
  | { readonly kind: "forbidden"; readonly description: string }
  | { readonly kind: "rejected"; readonly status: number; readonly description: string }
  | { readonly kind: "unavailable"; readonly status: number | null; readonly description: string }
  | { readonly kind: "not_sent"; readonly reason: NotSentReason; readonly description: string };

export type NotSentReason = "no_token" | "bad_base_url" | "empty_text";

export interface SendMessageParams {
  readonly chatId: number;
  /** Plain text (no `parse_mode`): a model's reply is not trusted to be valid Markdown or HTML. */
  readonly text: string;
  /** The source message; the reply is still sent if it was deleted meanwhile. */
  readonly replyToMessageId?: number | undefined;
  /** The forum topic, for conversations `telegram:<bot>:<chat>:<thread>`. */
  readonly messageThreadId?: number | undefined;
}

/**
 * A Bot API request that has not answered in this long is reported `unavailable` rather than
 * waited on: the queue consumer holding it has its own wall-clock budget.
 */
const REQUEST_TIMEOUT_MS = 30_000;
/** Telegram always sends `retry_after` with a 429; a proxy in between might not. */
const DEFAULT_RETRY_AFTER_SECONDS = 5;
/** Descriptions are evidence (they end up in delivery events), kept bounded. */
const MAX_DESCRIPTION_CHARS = 500;

const answerSchema = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), result: z.unknown() }),
  z.object({
    ok: z.literal(false),
    error_code: z.number().int(),
    description: z.string(),
    parameters: z.object({ retry_after: z.number().int().nonnegative().optional() }).optional(),
  }),
]);

const sentMessageSchema = z.object({ message_id: z.number().int() });

type Failure = { readonly ok: false; readonly error: SendFailure };

function scrub(text: string, token: string): string {
  return text.replaceAll(token, "<token>").slice(0, MAX_DESCRIPTION_CHARS);
}

function retryAfterHeader(headers: Headers): number | undefined {
  const value = headers.get("retry-after")?.trim();
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}

/** Telegram's `error_code` (or, without a Bot API body, the HTTP status) mapped once to a kind. */
function failureOf(status: number, description: string, retryAfterSeconds: number | undefined): Failure {
  if (status === 429) return { ok: false, error: { kind: "rate_limited", retryAfterSeconds: retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS, description } };
  if (status === 403) return { ok: false, error: { kind: "forbidden", description } };
  if (status >= 400 && status < 500) return { ok: false, error: { kind: "rejected", status, description } };
  return { ok: false, error: { kind: "unavailable", status, description } };
}

const notSent = (reason: NotSentReason, description: string): Failure => ({ ok: false, error: { kind: "not_sent", reason, description } });

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** One Bot API method call; `result` is checked against the method's schema. */
async function callBotApi<T>(env: Env, botId: string, method: string, params: Readonly<Record<string, unknown>>, resultSchema: z.ZodType<T>): Promise<Result<T, SendFailure>> {
  const token = telegramBotToken(env, botId);
  if (token === undefined) return notSent("no_token", `no Bot API token for bot ${botId} (the secret TELEGRAM_BOT_TOKEN_${botId})`);
  const baseUrl = telegramApiBaseUrl(env);
  if (baseUrl === undefined) return notSent("bad_base_url", "TELEGRAM_API_BASE_URL is not an http(s) URL");

  let response: Response;
  let text: string;
  try {
    response = await fetch(`${baseUrl}/bot${token}/${method}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(params),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    text = await response.text();
  } catch (error) {
    const timedOut = error instanceof Error && error.name === "TimeoutError";
    const description = timedOut ? `no answer within ${REQUEST_TIMEOUT_MS / 1000}s` : error instanceof Error ? error.message : String(error);
    return { ok: false, error: { kind: "unavailable", status: null, description: scrub(description, token) } };
  }

  const answer = answerSchema.safeParse(parseJson(text));
  if (!answer.success) {
    // Not a Bot API answer (a proxy's error page, a truncated body): judged by the HTTP status; a
    // 2xx without a readable result may have sent the message, so it is `unavailable`, not success.
    const status = response.status;
    const description = `HTTP ${status} without a Bot API answer`;
    if (status >= 200 && status < 300) return { ok: false, error: { kind: "unavailable", status, description } };
    return failureOf(status, description, retryAfterHeader(response.headers));
  }
  if (!answer.data.ok) {
    const { error_code, description, parameters } = answer.data;
    return failureOf(error_code, scrub(description, token), parameters?.retry_after ?? retryAfterHeader(response.headers));
  }
  const result = resultSchema.safeParse(answer.data.result);
  if (!result.success) return { ok: false, error: { kind: "unavailable", status: response.status, description: `${method} answered ok without the expected result` } };
  return ok(result.data);
}

/** `sendMessage`: the id Telegram gave the message, or why it was not sent. */
export async function sendMessage(env: Env, botId: string, params: SendMessageParams): Promise<Result<{ readonly messageId: number }, SendFailure>> {
  const body: Record<string, unknown> = { chat_id: params.chatId, text: params.text };
  // Replying keeps the answer next to its question in a busy group; allow_sending_without_reply
  // sends it anyway when the user deleted the question in the meantime (otherwise a 400).
  if (params.replyToMessageId !== undefined) body["reply_parameters"] = { message_id: params.replyToMessageId, allow_sending_without_reply: true };
  if (params.messageThreadId !== undefined) body["message_thread_id"] = params.messageThreadId;
  const sent = await callBotApi(env, botId, "sendMessage", body, sentMessageSchema);
  return sent.ok ? ok({ messageId: sent.value.message_id }) : sent;
}
