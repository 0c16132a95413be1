import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as conversationIds from "../../src/core/conversation-id";
import { telegramConversationId, telegramUpdateEvent } from "../../src/core/telegram-message";
import { mapTelegramUpdate, telegramUpdateSchema } from "../../src/core/telegram-update";

/**
 * The one mapping, from both sides. Foldline's webhook maps an update its schema has parsed (unknown
 * fields stripped); the grammY plugin maps the update as Telegram sent it, unknown fields and all.
 * Both must write the same event into the same conversation, the idempotency key aside (the
 * webhook's `tg:` namespace is Foldline's own). telegram-update.test.ts holds the mapping itself.
 */

const BOT = "7001";
const KEY = "grammy:update:any";

const fileArb = fc.record({ file_id: fc.string({ minLength: 1, maxLength: 20 }), file_unique_id: fc.string({ maxLength: 10 }), file_size: fc.nat() }, { requiredKeys: ["file_id"] });

/** Fields Telegram sends that Foldline does not read: the schema strips them, the plugin never looks. */
const unread = {
  entities: fc.array(fc.record({ type: fc.constantFrom("bold", "mention", "url"), offset: fc.nat(50), length: fc.nat(50) }), { maxLength: 2 }),
  link_preview_options: fc.record({ is_disabled: fc.boolean() }),
  has_protected_content: fc.constant(true),
  via_bot: fc.record({ id: fc.nat(), is_bot: fc.constant(true), first_name: fc.string({ maxLength: 10 }) }),
};

const messageArb = fc.record(
  {
    message_id: fc.integer({ min: 1, max: 2 ** 31 }),
    date: fc.integer({ min: 1_400_000_000, max: 2_000_000_000 }),
    edit_date: fc.integer({ min: 1_400_000_000, max: 2_000_000_000 }),
    chat: fc.record(
      {
        id: fc.integer({ min: -1_009_999_999_999, max: 9_999_999_999 }),
        type: fc.constantFrom("private", "group", "supergroup", "channel"),
        title: fc.string({ maxLength: 30 }),
        username: fc.stringMatching(/^[a-z][a-z0-9_]{4,20}$/),
        is_forum: fc.boolean(),
      },
      { requiredKeys: ["id", "type"] },
    ),
    from: fc.record(
      {
        id: fc.integer({ min: 1, max: 9_999_999_999 }),
        is_bot: fc.boolean(),
        first_name: fc.string({ maxLength: 64 }),
        last_name: fc.string({ maxLength: 64 }),
        username: fc.oneof(fc.stringMatching(/^[a-z][a-z0-9_]{4,31}$/), fc.constant("not a username")),
        language_code: fc.constantFrom("en", "pt"),
      },
      { requiredKeys: ["id", "first_name"] },
    ),
    sender_chat: fc.record({ id: fc.integer({ min: -1_009_999_999_999, max: -1 }), type: fc.constant("channel"), title: fc.string({ maxLength: 30 }) }, { requiredKeys: ["id", "type"] }),
    author_signature: fc.string({ maxLength: 30 }),
    is_topic_message: fc.boolean(),
    message_thread_id: fc.integer({ min: 1, max: 1_000_000 }),
    reply_to_message: fc.record({ message_id: fc.integer({ min: 1, max: 2 ** 31 }), date: fc.nat() }),
    text: fc.string({ unit: "grapheme", maxLength: 100 }),
    caption: fc.string({ unit: "grapheme", maxLength: 100 }),
    photo: fc.array(fileArb, { minLength: 1, maxLength: 3 }),
    voice: fc.record({ file_id: fc.string({ minLength: 1, maxLength: 20 }), duration: fc.nat(600) }),
    document: fc.record({ file_id: fc.string({ minLength: 1, maxLength: 20 }), file_name: fc.string({ maxLength: 20 }) }, { requiredKeys: ["file_id"] }),
    sticker: fc.record({ file_id: fc.string({ minLength: 1, maxLength: 20 }), emoji: fc.constantFrom("🙂", "🎉") }, { requiredKeys: ["file_id"] }),
    venue: fc.record({ title: fc.string({ maxLength: 20 }), address: fc.string({ maxLength: 20 }), location: fc.record({ latitude: fc.constant(1), longitude: fc.constant(2) }) }),
    location: fc.record({ latitude: fc.double({ min: -90, max: 90, noNaN: true }), longitude: fc.double({ min: -180, max: 180, noNaN: true }) }),
    poll: fc.record({ id: fc.string(), question: fc.string({ maxLength: 40 }) }),
    dice: fc.record({ emoji: fc.constantFrom("🎲", "🎯"), value: fc.integer({ min: 1, max: 6 }) }),
    new_chat_members: fc.array(fc.record({ id: fc.nat(), is_bot: fc.boolean(), first_name: fc.string({ maxLength: 10 }) }), { maxLength: 1 }),
    ...unread,
  },
  { requiredKeys: ["message_id", "date", "chat"] },
);

const updateArb = fc.oneof(
  fc.record({ update_id: fc.nat(), message: messageArb }),
  fc.record({ update_id: fc.nat(), edited_message: messageArb }),
  fc.record({ update_id: fc.nat(), channel_post: messageArb }),
  fc.record({ update_id: fc.nat(), edited_channel_post: messageArb }),
  fc.record({ update_id: fc.nat(), callback_query: fc.record({ id: fc.string(), data: fc.string() }) }),
);

describe("telegramUpdateEvent: the webhook's mapping, shared", () => {
  it("maps an update as Telegram sent it exactly as the webhook maps it once its schema has parsed it, the key aside", () => {
    fc.assert(
      fc.property(updateArb, (raw) => {
        const parsed = telegramUpdateSchema.safeParse(raw);
        // Updates past the schema's bounds never reach the webhook's mapping; the rest must agree.
        fc.pre(parsed.success);
        if (!parsed.success) return;
        const byWebhook = mapTelegramUpdate(BOT, parsed.data);
        const byPlugin = telegramUpdateEvent(BOT, raw, KEY);
        expect(byPlugin).toEqual(byWebhook.kind === "event" ? { ...byWebhook, event: { ...byWebhook.event, idempotencyKey: KEY } } : byWebhook);
      }),
      { numRuns: 300 },
    );
  });

  it("is where conversation ids are written: conversation-id.ts hands out the same function", () => {
    expect(conversationIds.telegramConversationId).toBe(telegramConversationId);
    expect(conversationIds.telegramRoute(telegramConversationId("7001", -100123, 9))).toEqual({ botId: "7001", chatId: -100123, threadId: 9 });
  });
});
