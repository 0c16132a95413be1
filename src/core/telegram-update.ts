import { z } from "zod";
import type { EventInput } from "./events";
import { MAX_TEXT_CHARS } from "./events";
import { telegramUpdateEvent } from "./telegram-message";

/**
 * Telegram Bot API updates, narrowed to the fields Foldline reads. Unknown fields are kept out of
 * the parsed value (zod strips them); an update kind Foldline does not use is acknowledged and
 * ignored, because Telegram retries every non-2xx answer for up to a day. What an update becomes
 * is core/telegram-message.ts's, the one mapping the grammY plugin shares.
 */

// Telegram caps names at 64 characters; 127 UTF-16 units each keeps "first last" within an author name.
const user = z.object({
  id: z.number().int(),
  is_bot: z.boolean().optional(),
  first_name: z.string().max(127),
  last_name: z.string().max(127).optional(),
  username: z.string().max(64).optional(),
});

const chat = z.object({
  id: z.number().int(),
  type: z.enum(["private", "group", "supergroup", "channel"]),
  title: z.string().max(256).optional(),
  username: z.string().max(64).optional(),
  first_name: z.string().max(256).optional(),
  last_name: z.string().max(256).optional(),
});

const file = z.object({ file_id: z.string().max(256), file_unique_id: z.string().max(128).optional() });

/** Unix seconds up to the year 2100: anything later is not a Telegram timestamp. */
const unixTime = z.number().int().min(0).max(4_102_444_800);

const message = z.object({
  message_id: z.number().int(),
  message_thread_id: z.number().int().optional(),
  is_topic_message: z.boolean().optional(),
  date: unixTime,
  edit_date: unixTime.optional(),
  chat,
  from: user.optional(),
  sender_chat: chat.optional(),
  author_signature: z.string().max(256).optional(),
  reply_to_message: z.object({ message_id: z.number().int() }).optional(),
  text: z.string().max(MAX_TEXT_CHARS).optional(),
  caption: z.string().max(MAX_TEXT_CHARS).optional(),
  photo: z.array(file.extend({ width: z.number().optional(), height: z.number().optional() })).optional(),
  video: file.optional(),
  video_note: file.optional(),
  animation: file.optional(),
  audio: file.extend({ title: z.string().max(256).optional(), performer: z.string().max(256).optional() }).optional(),
  voice: file.extend({ duration: z.number().optional() }).optional(),
  document: file.extend({ file_name: z.string().max(256).optional() }).optional(),
  sticker: file.extend({ emoji: z.string().max(16).optional() }).optional(),
  location: z.object({ latitude: z.number(), longitude: z.number() }).optional(),
  venue: z.object({ title: z.string().max(256), address: z.string().max(512) }).optional(),
  contact: z.object({ first_name: z.string().max(256), phone_number: z.string().max(64) }).optional(),
  poll: z.object({ question: z.string().max(512) }).optional(),
  dice: z.object({ emoji: z.string().max(16), value: z.number().int() }).optional(),
});

export const telegramUpdateSchema = z.object({
  update_id: z.number().int().nonnegative(),
  message: message.optional(),
  edited_message: message.optional(),
  channel_post: message.optional(),
  edited_channel_post: message.optional(),
});

export type TelegramUpdate = z.infer<typeof telegramUpdateSchema>;

export type TelegramIngest =
  | { readonly kind: "event"; readonly conversationId: string; readonly event: EventInput }
  | { readonly kind: "ignored"; readonly reason: string };

/** The key that makes a redelivered update idempotent: `update_id` is unique per bot. */
export const updateIdempotencyKey = (updateId: number): string => `tg:update:${updateId}`;

export function mapTelegramUpdate(botId: string, update: TelegramUpdate): TelegramIngest {
  return telegramUpdateEvent(botId, update, updateIdempotencyKey(update.update_id));
}
