// `.js`: this module also ships in `foldline/grammy`, built by tsc for Node (nodenext), where a
// relative import names its file; the Worker's bundler resolves it to the .ts beside it.
import { hasUnsafeChars } from "./unsafe-chars.js";

/**
 * What a Telegram update is in the log: the one mapping from messages to `source` events and from
 * edits to `correction` events, and the conversation a message belongs to. Foldline's webhook calls
 * it on an update its schema has validated (core/telegram-update.ts); the grammY plugin
 * (`foldline/grammy`, client/grammy.ts) calls it on the update grammY hands a bot, and on the
 * messages the bot sends, so a bot can move between the webhook and the plugin without its history
 * changing shape or conversation.
 *
 * Pure and import-free but for the unsafe-character check (itself import-free): the plugin ships
 * it, and a bot installs no zod. The shapes below are the fields read, as Telegram sends them; the
 * webhook's zod-inferred update and grammY's `Update` both fit them.
 */

export interface TelegramUser {
  readonly id: number;
  readonly first_name: string;
  readonly last_name?: string | undefined;
  readonly username?: string | undefined;
}

export interface TelegramChat {
  readonly id: number;
  readonly type: "private" | "group" | "supergroup" | "channel";
  readonly title?: string | undefined;
  readonly username?: string | undefined;
  readonly first_name?: string | undefined;
}

interface TelegramFile {
  readonly file_id: string;
  readonly file_unique_id?: string | undefined;
}

/** Where a message is: its chat, and its forum topic when it is in one. */
export interface TelegramPlace {
  readonly chat: { readonly id: number };
  readonly message_thread_id?: number | undefined;
  readonly is_topic_message?: boolean | undefined;
}

export interface TelegramMessage extends TelegramPlace {
  readonly message_id: number;
  readonly date: number;
  readonly edit_date?: number | undefined;
  readonly chat: TelegramChat;
  readonly from?: TelegramUser | undefined;
  readonly sender_chat?: TelegramChat | undefined;
  readonly author_signature?: string | undefined;
  readonly reply_to_message?: { readonly message_id: number } | undefined;
  readonly text?: string | undefined;
  readonly caption?: string | undefined;
  readonly photo?: readonly TelegramFile[] | undefined;
  readonly video?: TelegramFile | undefined;
  readonly video_note?: TelegramFile | undefined;
  readonly animation?: TelegramFile | undefined;
  readonly audio?: (TelegramFile & { readonly title?: string | undefined; readonly performer?: string | undefined }) | undefined;
  readonly voice?: (TelegramFile & { readonly duration?: number | undefined }) | undefined;
  readonly document?: (TelegramFile & { readonly file_name?: string | undefined }) | undefined;
  readonly sticker?: (TelegramFile & { readonly emoji?: string | undefined }) | undefined;
  readonly location?: { readonly latitude: number; readonly longitude: number } | undefined;
  readonly venue?: { readonly title: string; readonly address: string } | undefined;
  readonly contact?: { readonly first_name: string } | undefined;
  readonly poll?: { readonly question: string } | undefined;
  readonly dice?: { readonly emoji: string; readonly value: number } | undefined;
}

/** The update kinds Foldline records; any other kind is acknowledged and ignored. */
export interface TelegramUpdateFields {
  readonly update_id: number;
  readonly message?: TelegramMessage | undefined;
  readonly edited_message?: TelegramMessage | undefined;
  readonly channel_post?: TelegramMessage | undefined;
  readonly edited_channel_post?: TelegramMessage | undefined;
}

export type TelegramAttachment = {
  readonly type: "photo" | "video" | "video_note" | "animation" | "audio" | "voice" | "document" | "sticker" | "location" | "venue" | "contact" | "poll" | "dice";
  readonly fileId?: string;
  readonly fileUniqueId?: string;
};

/** An event this mapping writes: a subset of the log's `EventInput` (telegram-update.ts returns it as one, so the compiler holds the two together). */
export type TelegramEvent =
  | {
      readonly kind: "source";
      readonly idempotencyKey: string;
      readonly sensitive: false;
      readonly body: {
        readonly messageId: string;
        readonly author: { readonly id: string; readonly name?: string; readonly username?: string };
        readonly text: string;
        readonly sentAt: string;
        readonly replyToMessageId?: string;
        readonly attachments?: TelegramAttachment[];
        readonly conversationType: "direct" | "group";
      };
    }
  | {
      readonly kind: "correction";
      readonly idempotencyKey: string;
      readonly sensitive: false;
      readonly body: { readonly action: "edit"; readonly targetMessageId: string; readonly text: string; readonly editedAt: string };
    };

export type TelegramIngest =
  | { readonly kind: "event"; readonly conversationId: string; readonly event: TelegramEvent }
  | { readonly kind: "ignored"; readonly reason: string };

/**
 * `telegram:<botId>:<chatId>` and `telegram:<botId>:<chatId>:<threadId>` for forum topics: the
 * spelling core/conversation-id.ts parses back (`telegramRoute`) and re-exports this from. It lives
 * here, without zod, so the grammY plugin names a chat exactly as the webhook does.
 */
export function telegramConversationId(botId: string, chatId: number, threadId?: number): string {
  return threadId === undefined ? `telegram:${botId}:${chatId}` : `telegram:${botId}:${chatId}:${threadId}`;
}

/**
 * The update as one event under `idempotencyKey` (the webhook's is `tg:update:<update_id>`, which
 * only Foldline may write; a client chooses its own, keyed on `update_id` just the same).
 */
export function telegramUpdateEvent(botId: string, update: TelegramUpdateFields, idempotencyKey: string): TelegramIngest {
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

/** The conversation of a message (or of anything placed like one: a callback's message, a sent reply). */
export function conversationOf(botId: string, m: TelegramPlace): string {
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

/**
 * Text of a message as history: its text or caption, preceded by a short marker for anything that
 * is not text (`[photo]`, `[voice 12s]`, `[location 52.5,13.4]`), whose file ids travel alongside.
 * Undefined for a message with neither (a service message: someone joined, the title changed).
 */
export function renderContent(m: TelegramMessage): { text: string; attachments: TelegramAttachment[] } | undefined {
  const markers: string[] = [];
  const attachments: TelegramAttachment[] = [];
  const addFile = (type: TelegramAttachment["type"], f: TelegramFile, label: string): void => {
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

/** A Telegram timestamp (Unix seconds) as the log's ISO time. */
export function isoFromUnix(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}
