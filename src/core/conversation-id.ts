import { z } from "zod";
import { safeIdString } from "./names";

/**
 * A conversation is keyed by its source:
 * - `telegram:<botId>:<chatId>` and `telegram:<botId>:<chatId>:<threadId>` for forum topics;
 * - `api:<key>` for any key a bot chooses (letters, digits and `._:-`).
 *
 * This module is the one owner of that format and of the Telegram ids inside it: everything that
 * builds, validates or takes apart a conversation id, a bot id or a `<botId>:<chatId>` pair calls
 * the functions below (`telegramConversationId` among them, defined zod-free in telegram-message.ts).
 */
const BOT = String.raw`\d{1,20}`;
/** Negative for groups and supergroups (`-100…`). */
const CHAT = String.raw`-?\d{1,20}`;
const THREAD = String.raw`\d{1,20}`;
const TELEGRAM_ID = new RegExp(`^telegram:(${BOT}):(${CHAT})(?::(${THREAD}))?$`);
const API_ID = /^api:[A-Za-z0-9._:-]{1,200}$/;
const CHAT_REF = new RegExp(`^(${BOT}):(${CHAT})$`);

/** A Telegram bot's numeric id, as it appears in webhook paths, secrets' names and conversation ids. */
export const TELEGRAM_BOT_ID = new RegExp(`^${BOT}$`);

export const conversationIdSchema = safeIdString()
  .max(256)
  .refine((id) => TELEGRAM_ID.test(id) || API_ID.test(id), {
    message: "expected telegram:<bot>:<chat>[:<thread>] or api:<key> (letters, digits, . _ : -)",
  });

/**
 * @internal Written by telegram-message.ts, which has no zod so the shipped grammY plugin can carry
 * it; re-exported beside `telegramRoute`, which reads it back, so the format's tests hold the two
 * together from one module.
 */
export { telegramConversationId } from "./telegram-message";

export interface TelegramRoute {
  readonly botId: string;
  readonly chatId: number;
  readonly threadId?: number;
}

/**
 * A Telegram chat or topic id in the one spelling `telegramConversationId` writes: a safe integer
 * (Telegram's ids have at most 52 significant bits) without leading zeros, `+` or `-0`. Any other
 * spelling would name a chat that is not the one it spells (`042` is chat 42, and a 17-digit id
 * rounds to its neighbour), so it names none.
 */
export function telegramIdNumber(text: string): number | undefined {
  if (!/^-?\d{1,20}$/.test(text)) return undefined;
  const id = Number(text);
  return Number.isSafeInteger(id) && String(id) === text ? id : undefined;
}

/**
 * `telegram:<bot>:<chat>[:<thread>]` as the webhook writes it, or undefined for conversations that
 * are not Telegram chats — including ids the schema accepts that no update produces (see
 * `telegramIdNumber`; bot ids have no leading zero, topics are positive): their replies are
 * recorded and sent nowhere.
 */
export function telegramRoute(conversationId: string): TelegramRoute | undefined {
  const match = TELEGRAM_ID.exec(conversationId);
  if (match === null) return undefined;
  const [, botId = "", chat = "", thread] = match;
  const chatId = telegramIdNumber(chat);
  if (chatId === undefined || botId.startsWith("0")) return undefined;
  if (thread === undefined) return { botId, chatId };
  const threadId = telegramIdNumber(thread);
  return threadId === undefined || threadId < 1 ? undefined : { botId, chatId, threadId };
}

/**
 * Whether the conversation is a direct (one-to-one) chat: a Telegram chat with a positive id is a
 * private chat with one user (groups, supergroups and channels are negative). An `api:` key says
 * nothing of who is in it, so it is never taken for one: a bot that keys private conversations
 * through the API declares them with sharing off (`memorySharing`).
 */
export function isDirectChat(conversationId: string): boolean {
  const route = telegramRoute(conversationId);
  return route !== undefined && route.chatId > 0;
}

/** A `<botId>:<chatId>` pair (the operator's chat), or undefined when the text is not one. */
export function telegramChatRef(text: string): { botId: string; chatId: number } | undefined {
  const match = CHAT_REF.exec(text);
  if (match === null) return undefined;
  const [, botId = "", chat = ""] = match;
  const chatId = telegramIdNumber(chat);
  return chatId === undefined ? undefined : { botId, chatId };
}

/**
 * The source and the chat part of a conversation id, as a boundary binds them:
 * `telegram:<bot>:<chat>[:<thread>]` → chat `<chat>[:<thread>]`; `api:<key>` → chat `<key>`.
 */
export function conversationChat(conversationId: string): { source: "telegram" | "api"; chat: string } {
  const [source, ...rest] = conversationId.split(":");
  if (source === "telegram") return { source: "telegram", chat: rest.slice(1).join(":") };
  return { source: "api", chat: rest.join(":") };
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

/**
 * Whether `outer` admits every conversation `inner` admits (pattern containment). An exact id is
 * inside an exact id only when they are equal and inside a prefix pattern when it starts with the
 * prefix; a prefix pattern is inside a prefix pattern whose prefix starts its own, never inside an
 * exact id. So `telegram:1:*` is inside `telegram:*`, not the other way round, and `*` holds all.
 * A pattern a single scope does not contain is refused even if several scopes together might
 * enumerate it: refusing a pattern is safe, admitting one too many is not.
 */
export function patternContains(outer: string, inner: string): boolean {
  if (outer.endsWith("*")) return inner.startsWith(outer.slice(0, -1));
  return !inner.endsWith("*") && inner === outer;
}

/** Whether some scope of `patterns` contains `inner` (`patternContains`). */
export function scopesContain(patterns: readonly string[], inner: string): boolean {
  return patterns.some((p) => patternContains(p, inner));
}
