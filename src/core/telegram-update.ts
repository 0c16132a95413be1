import { z } from "zod";
import { telegramConversationId } from "./conversation-id";
import type { EventInput } from "./events";
import { MAX_TEXT_CHARS } from "./events";
import { hasUnsafeChars } from "./names";

/**
 * Telegram Bot API updates, narrowed to the fields Foldline reads. Unknown fields are kept out of
 * the parsed value (zod strips them); an update kind Foldline does not use is acknowledged and
 * ignored, because Telegram retries every non-2xx answer for up to a day.
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
type TelegramMessage = z.infer<typeof message>;

export type TelegramIngest =
  | { readonly kind: "event"; readonly conversationId: string; readonly event: EventInput }
  | { readonly kind: "ignored"; readonly reason: string };

/** The key that makes a redelivered update idempotent: `update_id` is unique per bot. */
export const updateIdempotencyKey = (updateId: number): string => `tg:update:${updateId}`;

export function mapTelegramUpdate(botId: string, update: TelegramUpdate): TelegramIngest {
  const idempotencyKey = updateIdempotencyKey(update.update_id);
  const posted = update.message ?? update.channel_post;
  if (posted !== undefined) {
    const content = renderContent(posted);
    if (content === undefined) return { kind: "ignored", reason: "service message without content" };
    return {
      kind: "event",
      conversationId: conversationOf(botId, posted),
      event: {
        kind: "source",
        idempotencyKey,
        sensitive: false,
        body: {
          messageId: String(posted.message_id),
          author: authorOf(posted),
          text: content.text,
          sentAt: isoFromUnix(posted.date),
          ...(posted.reply_to_message === undefined
            ? {}
            : { replyToMessageId: String(posted.reply_to_message.message_id) }),
          ...(content.attachments.length === 0 ? {} : { attachments: content.attachments }),
          conversationType: posted.chat.type === "private" ? "direct" : "group",
        },
      },
    };
  }
  const edited = update.edited_message ?? update.edited_channel_post;
  if (edited !== undefined) {
    const content = renderContent(edited);
    if (content === undefined) return { kind: "ignored", reason: "edit without content" };
    return {
      kind: "event",
      conversationId: conversationOf(botId, edited),
      event: {
        kind: "correction",
        idempotencyKey,
        sensitive: false,
        body: {
          action: "edit",
          targetMessageId: String(edited.message_id),
          text: content.text,
          editedAt: isoFromUnix(edited.edit_date ?? edited.date),
        },
      },
    };
  }
  return { kind: "ignored", reason: "update kind not used" };
}

function conversationOf(botId: string, m: TelegramMessage): string {
  // Forum topics are conversations of their own; reply threads in ordinary groups are not.
  const topic = m.is_topic_message === true ? m.message_thread_id : undefined;
  return telegramConversationId(botId, m.chat.id, topic);
}

/**
 * Telegram usernames are letters, digits and `_`. One of any other shape is dropped rather than
 * refused, so the message is still stored (Telegram would not resend it); the numeric id stays.
 */
const TELEGRAM_USERNAME = /^[A-Za-z0-9_]{1,64}$/;
const usernameOf = (username: string | undefined) => (username !== undefined && TELEGRAM_USERNAME.test(username) ? { username } : {});

/** Names are kept exactly as Telegram sent them; they are normalized where rendered (core/names). */
function authorOf(m: TelegramMessage): { id: string; name?: string; username?: string } {
  if (m.from !== undefined) {
    const name = [m.from.first_name, m.from.last_name].filter((part) => part !== undefined && part !== "").join(" ");
    return { id: `tg:${m.from.id}`, name, ...usernameOf(m.from.username) };
  }
  const senderChat = m.sender_chat ?? m.chat;
  const name = m.author_signature ?? senderChat.title ?? senderChat.first_name;
  return {
    id: `tg:${senderChat.id}`,
    ...(name === undefined ? {} : { name }),
    ...usernameOf(senderChat.username),
  };
}

type Attachment = NonNullable<Extract<EventInput, { kind: "source" }>["body"]["attachments"]>[number];

/**
 * Text of a message as history: its text or caption, preceded by a short marker for anything that
 * is not text (`[photo]`, `[voice 12s]`, `[location 52.5,13.4]`), whose file ids travel alongside.
 */
function renderContent(m: TelegramMessage): { text: string; attachments: Attachment[] } | undefined {
  const markers: string[] = [];
  const attachments: Attachment[] = [];
  const addFile = (type: Attachment["type"], f: { file_id: string; file_unique_id?: string | undefined }, label: string): void => {
    markers.push(label);
    // File ids are Telegram's own tokens; one holding an unsafe character is not kept (the marker is).
    const fileId = hasUnsafeChars(f.file_id) ? {} : { fileId: f.file_id };
    const unique = f.file_unique_id === undefined || hasUnsafeChars(f.file_unique_id) ? {} : { fileUniqueId: f.file_unique_id };
    attachments.push({ type, ...fileId, ...unique });
  };
  const largestPhoto = m.photo?.at(-1);
  if (largestPhoto !== undefined) addFile("photo", largestPhoto, "[photo]");
  if (m.video !== undefined) addFile("video", m.video, "[video]");
  if (m.video_note !== undefined) addFile("video_note", m.video_note, "[video note]");
  if (m.animation !== undefined) addFile("animation", m.animation, "[animation]");
  if (m.audio !== undefined) {
    const title = [m.audio.performer, m.audio.title].filter((s) => s !== undefined).join(" – ");
    addFile("audio", m.audio, title === "" ? "[audio]" : `[audio ${title}]`);
  }
  if (m.voice !== undefined) addFile("voice", m.voice, m.voice.duration === undefined ? "[voice]" : `[voice ${m.voice.duration}s]`);
  if (m.document !== undefined && m.animation === undefined) {
    addFile("document", m.document, m.document.file_name === undefined ? "[document]" : `[document ${m.document.file_name}]`);
  }
  if (m.sticker !== undefined) addFile("sticker", m.sticker, m.sticker.emoji === undefined ? "[sticker]" : `[sticker ${m.sticker.emoji}]`);
  if (m.venue !== undefined) {
    markers.push(`[venue ${m.venue.title}, ${m.venue.address}]`);
    attachments.push({ type: "venue" });
  } else if (m.location !== undefined) {
    markers.push(`[location ${m.location.latitude},${m.location.longitude}]`);
    attachments.push({ type: "location" });
  }
  if (m.contact !== undefined) {
    markers.push(`[contact ${m.contact.first_name}]`);
    attachments.push({ type: "contact" });
  }
  if (m.poll !== undefined) {
    markers.push(`[poll ${m.poll.question}]`);
    attachments.push({ type: "poll" });
  }
  if (m.dice !== undefined) {
    markers.push(`[dice ${m.dice.emoji} ${m.dice.value}]`);
    attachments.push({ type: "dice" });
  }
  const words = m.text ?? m.caption;
  if (markers.length === 0 && words === undefined) return undefined;
  return { text: [...markers, ...(words === undefined ? [] : [words])].join(" "), attachments };
}

function isoFromUnix(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}
