import { env, exports } from "cloudflare:workers";
import { createApiToken } from "../../src/storage/control/tokens";
import { shardsOf } from "../../src/storage/shards";
import { shardOf } from "../support/shards";

export const BOT_ID = "7001";
export const WEBHOOK_SECRET = "test-webhook-secret-7001";
const ORIGIN = "http://foldline.test";

export async function tokenFor(...scopes: string[]): Promise<string> {
  return createApiToken(env.DB, "test", scopes, new Date());
}

export interface CallOptions {
  readonly token?: string;
  readonly body?: unknown;
  /** A raw body sent as is (for malformed-input tests). */
  readonly raw?: string;
  readonly headers?: Record<string, string>;
}

export async function call(method: string, path: string, options: CallOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  if (options.token !== undefined) headers.set("authorization", `Bearer ${options.token}`);
  const hasBody = options.body !== undefined || options.raw !== undefined;
  if (hasBody && !headers.has("content-type")) headers.set("content-type", "application/json");
  return exports.default.fetch(
    new Request(`${ORIGIN}${path}`, {
      method,
      headers,
      ...(hasBody ? { body: options.raw ?? JSON.stringify(options.body) } : {}),
    }),
  );
}

export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

export interface ErrorBody {
  error: { code: string; message: string; [detail: string]: unknown };
}

export function eventsPath(conversation: string, suffix = ""): string {
  return `/v1/conversations/${encodeURIComponent(conversation)}/events${suffix}`;
}

export function sourceEvent(key: string, messageId: string, text: string, extra: Record<string, unknown> = {}) {
  return { kind: "source", idempotencyKey: key, body: { messageId, author: { id: "u1", name: "Ada" }, text }, ...extra };
}

/** Every row of the log for one conversation, straight from D1. */
export async function logRows(conversation: string): Promise<{ seq: number; kind: string; idempotency_key: string; hash: string }[]> {
  const { results } = await (await shardOf(conversation)).prepare(
    "SELECT seq, kind, idempotency_key, lower(hex(hash)) AS hash FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) ORDER BY seq",
  )
    .bind(conversation)
    .all<{ seq: number; kind: string; idempotency_key: string; hash: string }>();
  return results;
}

/** Every event row of every conversation, over all shards. */
/**
 * Every event a request can write (sources and corrections, and a conversation's placement), on
 * every shard. Run events, replies and deliveries are left out: compactions and reply jobs that
 * earlier files in the same workerd queued still write them in the background, so counting them
 * made "writes nothing" depend on timing; none of them is written without a source first.
 */
export async function totalEventRows(): Promise<number> {
  const counts = await Promise.all([
    ...shardsOf(env).map(({ db }) => db.prepare("SELECT COUNT(*) AS n FROM log WHERE kind IN ('source', 'correction')").first<{ n: number }>()),
    env.DB.prepare("SELECT COUNT(*) AS n FROM conversation_placements").first<{ n: number }>(),
  ]);
  return counts.reduce((sum, row) => sum + (row?.n ?? 0), 0);
}

export function webhook(update: unknown, options: { secret?: string | null; bot?: string; raw?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  const secret = options.secret === undefined ? WEBHOOK_SECRET : options.secret;
  if (secret !== null) headers["x-telegram-bot-api-secret-token"] = secret;
  return call("POST", `/telegram/${options.bot ?? BOT_ID}/webhook`, {
    headers,
    ...(options.raw === undefined ? { body: update } : { raw: options.raw }),
  });
}

let nextMessageId = 1;
export function textUpdate(updateId: number, chatId: number, text: string, extra: Record<string, unknown> = {}) {
  return {
    update_id: updateId,
    message: {
      message_id: nextMessageId++,
      date: 1_790_000_000 + updateId,
      chat: { id: chatId, type: "private", first_name: "Ada" },
      from: { id: chatId, is_bot: false, first_name: "Ada", username: "ada" },
      text,
      ...extra,
    },
  };
}

/** Storage is shared by the tests of a file, so each test works in a conversation of its own. */
export function freshConversation(prefix = "api:test"): string {
  return `${prefix}:${crypto.randomUUID()}`;
}
