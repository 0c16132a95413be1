import { z } from "zod";

/**
 * A conversation is keyed by its source:
 * - `telegram:<botId>:<chatId>` and `telegram:<botId>:<chatId>:<threadId>` for forum topics;
 * - `api:<key>` for any key a bot chooses (letters, digits and `._:-`).
 */
const TELEGRAM_ID = /^telegram:\d{1,20}:-?\d{1,20}(?::\d{1,20})?$/;
const API_ID = /^api:[A-Za-z0-9._:-]{1,200}$/;

export const conversationIdSchema = z
  .string()
  .max(256)
  .refine((id) => TELEGRAM_ID.test(id) || API_ID.test(id), {
    message: "expected telegram:<bot>:<chat>[:<thread>] or api:<key> (letters, digits, . _ : -)",
  });

export type ConversationId = z.infer<typeof conversationIdSchema>;

export function telegramConversationId(botId: string, chatId: number, threadId?: number): ConversationId {
  return threadId === undefined ? `telegram:${botId}:${chatId}` : `telegram:${botId}:${chatId}:${threadId}`;
}

/** `telegram:<bot>:<chat>[:<thread>]`, or undefined for conversations that are not Telegram chats. */
export function telegramRoute(conversationId: string): { botId: string; chatId: number; threadId?: number } | undefined {
  const match = /^telegram:(\d+):(-?\d+)(?::(\d+))?$/.exec(conversationId);
  if (match === null) return undefined;
  const [, botId = "", chat = "", thread] = match;
  return thread === undefined ? { botId, chatId: Number(chat) } : { botId, chatId: Number(chat), threadId: Number(thread) };
}

/**
 * Token scopes are conversation patterns: an exact id, or a prefix ending in `*` (`api:acme:*`,
 * `telegram:123:*`, or `*` for every conversation). A `*` anywhere else is not a wildcard.
 */
export const scopePatternSchema = z
  .string()
  .min(1)
  .max(256)
  .refine((p) => !p.slice(0, -1).includes("*"), { message: "only a trailing * is a wildcard" });

export function scopeAllows(pattern: string, conversationId: string): boolean {
  if (pattern.endsWith("*")) return conversationId.startsWith(pattern.slice(0, -1));
  return pattern === conversationId;
}

export function scopesAllow(patterns: readonly string[], conversationId: string): boolean {
  return patterns.some((p) => scopeAllows(p, conversationId));
}
