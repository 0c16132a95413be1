import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { conversationIdSchema } from "../../src/core/conversation-id";
import { eventInputSchema } from "../../src/core/events";
import type { TelegramIngest } from "../../src/core/telegram-update";
import { mapTelegramUpdate, telegramUpdateSchema, updateIdempotencyKey } from "../../src/core/telegram-update";

const BOT = "7001";
const SENT = 1_714_557_600; // 2024-05-01T10:00:00Z
const EDITED = 1_714_557_900; // 2024-05-01T10:05:00Z
const GROUP = { id: -1_001_234_567_890, type: "supergroup", title: "Team" } as const;
const ADA = { id: 42, is_bot: false, first_name: "Ada", last_name: "Lovelace", username: "ada" };

type Raw = Record<string, unknown>;

/** Parses like the webhook does (unknown fields stripped), then maps. */
function ingest(raw: unknown): TelegramIngest {
  return mapTelegramUpdate(BOT, telegramUpdateSchema.parse(raw));
}

function message(fields: Raw = {}): Raw {
  return { message_id: 7, date: SENT, chat: GROUP, from: ADA, ...fields };
}

/** The event of an ingest that must be an event. */
function eventOf(result: TelegramIngest) {
  if (result.kind !== "event") throw new Error(`expected an event, got ignored: ${result.reason}`);
  return result;
}

function sourceBodyOf(result: TelegramIngest) {
  const { event } = eventOf(result);
  if (event.kind !== "source") throw new Error(`expected a source, got ${event.kind}`);
  return event.body;
}

describe("mapTelegramUpdate: messages", () => {
  it("maps a text message to a source event", () => {
    expect(ingest({ update_id: 1001, message: message({ text: "hello" }) })).toEqual({
      kind: "event",
      conversationId: "telegram:7001:-1001234567890",
      event: {
        kind: "source",
        idempotencyKey: "tg:update:1001",
        sensitive: false,
        body: {
          messageId: "7",
          author: { id: "tg:42", name: "Ada Lovelace", username: "ada" },
          text: "hello",
          sentAt: "2024-05-01T10:00:00.000Z",
          conversationType: "group",
        },
      },
    });
  });

  it("keys idempotency on update_id, not on message_id", () => {
    expect(updateIdempotencyKey(0)).toBe("tg:update:0");
    const a = eventOf(ingest({ update_id: 5, message: message({ text: "x" }) }));
    const b = eventOf(ingest({ update_id: 6, message: message({ text: "x" }) }));
    expect([a.event.idempotencyKey, b.event.idempotencyKey]).toEqual(["tg:update:5", "tg:update:6"]);
  });

  it("records the replied-to message id", () => {
    const body = sourceBodyOf(ingest({ update_id: 1, message: message({ text: "yes", reply_to_message: { message_id: 5, date: SENT } }) }));
    expect(body.replyToMessageId).toBe("5");
  });

  it("omits optional author parts the user does not have", () => {
    const body = sourceBodyOf(
      ingest({ update_id: 1, message: message({ text: "hi", from: { id: 9, is_bot: false, first_name: "Solo" } }) }),
    );
    expect(body.author).toEqual({ id: "tg:9", name: "Solo" });
  });

  it("attributes an anonymous admin's message to the group it speaks for", () => {
    const body = sourceBodyOf(
      ingest({ update_id: 1, message: message({ text: "from the admins", from: undefined, sender_chat: GROUP }) }),
    );
    expect(body.author).toEqual({ id: "tg:-1001234567890", name: "Team" });
  });

  it("renders a photo with caption as '[photo] caption' with the largest size's file id", () => {
    const body = sourceBodyOf(
      ingest({
        update_id: 1,
        message: message({
          caption: "look at this",
          photo: [
            { file_id: "small", file_unique_id: "u-small", width: 90, height: 90, file_size: 1_000 },
            { file_id: "medium", file_unique_id: "u-medium", width: 320, height: 320 },
            { file_id: "large", file_unique_id: "u-large", width: 1280, height: 1280 },
          ],
        }),
      }),
    );
    expect(body.text).toBe("[photo] look at this");
    expect(body.attachments).toEqual([{ type: "photo", fileId: "large", fileUniqueId: "u-large" }]);
  });

  it.each([
    { name: "sticker", fields: { sticker: { file_id: "S", emoji: "😀" } }, text: "[sticker 😀]", types: ["sticker"] },
    { name: "sticker without emoji", fields: { sticker: { file_id: "S" } }, text: "[sticker]", types: ["sticker"] },
    { name: "voice", fields: { voice: { file_id: "V", duration: 12 } }, text: "[voice 12s]", types: ["voice"] },
    { name: "voice without duration", fields: { voice: { file_id: "V" } }, text: "[voice]", types: ["voice"] },
    { name: "video with caption", fields: { video: { file_id: "F" }, caption: "clip" }, text: "[video] clip", types: ["video"] },
    { name: "video note", fields: { video_note: { file_id: "F" } }, text: "[video note]", types: ["video_note"] },
    {
      name: "animation (Telegram also sends it as a document)",
      fields: { animation: { file_id: "A" }, document: { file_id: "A", file_name: "cat.gif" } },
      text: "[animation]",
      types: ["animation"],
    },
    {
      name: "audio",
      fields: { audio: { file_id: "F", performer: "Queen", title: "Bohemian Rhapsody" } },
      text: "[audio Queen – Bohemian Rhapsody]",
      types: ["audio"],
    },
    { name: "audio without tags", fields: { audio: { file_id: "F" } }, text: "[audio]", types: ["audio"] },
    {
      name: "document",
      fields: { document: { file_id: "D", file_name: "report.pdf" }, caption: "Q3" },
      text: "[document report.pdf] Q3",
      types: ["document"],
    },
    { name: "location", fields: { location: { latitude: 52.5, longitude: 13.4 } }, text: "[location 52.5,13.4]", types: ["location"] },
    {
      name: "venue (Telegram also sends its location)",
      fields: { venue: { title: "Café", address: "Main St 1" }, location: { latitude: 1, longitude: 2 } },
      text: "[venue Café, Main St 1]",
      types: ["venue"],
    },
    { name: "contact", fields: { contact: { first_name: "Grace", phone_number: "+100" } }, text: "[contact Grace]", types: ["contact"] },
    { name: "poll", fields: { poll: { question: "Lunch?" } }, text: "[poll Lunch?]", types: ["poll"] },
    { name: "dice", fields: { dice: { emoji: "🎲", value: 4 } }, text: "[dice 🎲 4]", types: ["dice"] },
  ])("renders a $name as a marker", ({ fields, text, types }) => {
    const body = sourceBodyOf(ingest({ update_id: 1, message: message(fields) }));
    expect(body.text).toBe(text);
    expect(body.attachments?.map((a) => a.type)).toEqual(types);
  });

  it("carries file ids of file attachments and none for places", () => {
    const sticker = sourceBodyOf(ingest({ update_id: 1, message: message({ sticker: { file_id: "S1", file_unique_id: "U1" } }) }));
    expect(sticker.attachments).toEqual([{ type: "sticker", fileId: "S1", fileUniqueId: "U1" }]);
    const place = sourceBodyOf(ingest({ update_id: 1, message: message({ location: { latitude: 0, longitude: 0 } }) }));
    expect(place.attachments).toEqual([{ type: "location" }]);
  });

  it("has no attachments key for plain text", () => {
    expect(sourceBodyOf(ingest({ update_id: 1, message: message({ text: "plain" }) }))).not.toHaveProperty("attachments");
  });

  it("maps a channel post, attributed to the channel and its signature", () => {
    const channel = { id: -1_009_999, type: "channel", title: "News", username: "news" };
    const result = eventOf(
      ingest({
        update_id: 3,
        channel_post: { message_id: 11, date: SENT, chat: channel, sender_chat: channel, author_signature: "Editor", text: "breaking" },
      }),
    );
    expect(result.conversationId).toBe("telegram:7001:-1009999");
    expect(result.event).toMatchObject({
      kind: "source",
      body: { messageId: "11", text: "breaking", author: { id: "tg:-1009999", name: "Editor", username: "news" } },
    });
  });
});

describe("mapTelegramUpdate: edits", () => {
  it("maps edited_message to an edit correction of that message, stamped with edit_date", () => {
    expect(ingest({ update_id: 1002, edited_message: message({ text: "hello, fixed", edit_date: EDITED }) })).toEqual({
      kind: "event",
      conversationId: "telegram:7001:-1001234567890",
      event: {
        kind: "correction",
        idempotencyKey: "tg:update:1002",
        sensitive: false,
        body: { action: "edit", targetMessageId: "7", text: "hello, fixed", editedAt: "2024-05-01T10:05:00.000Z" },
      },
    });
  });

  it("falls back to the message date when edit_date is missing", () => {
    const { event } = eventOf(ingest({ update_id: 1, edited_message: message({ text: "x" }) }));
    expect(event.body).toMatchObject({ editedAt: "2024-05-01T10:00:00.000Z" });
  });

  it("renders an edited caption with its marker", () => {
    const { event } = eventOf(
      ingest({ update_id: 1, edited_message: message({ photo: [{ file_id: "P" }], caption: "new caption", edit_date: EDITED }) }),
    );
    expect(event.body).toMatchObject({ action: "edit", text: "[photo] new caption" });
  });

  it("maps edited_channel_post to an edit correction", () => {
    const channel = { id: -100_555, type: "channel", title: "News" };
    const { event, conversationId } = eventOf(
      ingest({ update_id: 9, edited_channel_post: { message_id: 3, date: SENT, edit_date: EDITED, chat: channel, text: "v2" } }),
    );
    expect(conversationId).toBe("telegram:7001:-100555");
    expect(event).toMatchObject({ kind: "correction", body: { action: "edit", targetMessageId: "3", text: "v2" } });
  });
});

describe("mapTelegramUpdate: conversations", () => {
  it.each([
    ["private", "direct"],
    ["group", "group"],
    ["supergroup", "group"],
    ["channel", "group"],
  ] as const)("keeps the chat's type on the source: a %s chat is %s", (type, conversationType) => {
    const chat = { id: type === "private" ? 42 : -100_42, type, ...(type === "private" ? { first_name: "Ada" } : { title: "Team" }) };
    const update = type === "channel" ? { update_id: 1, channel_post: message({ chat, text: "x", from: undefined }) } : { update_id: 1, message: message({ chat, text: "x" }) };
    expect(sourceBodyOf(ingest(update)).conversationType).toBe(conversationType);
  });

  it("the source body schema accepts the type and nothing else", () => {
    const source = (conversationType: unknown) => ({ kind: "source", idempotencyKey: "k", body: { messageId: "1", author: { id: "a" }, text: "x", conversationType } });
    expect(eventInputSchema.safeParse(source("direct")).success).toBe(true);
    expect(eventInputSchema.safeParse(source("supergroup")).success).toBe(false);
  });

  it.each([
    { name: "forum topic message", fields: { is_topic_message: true, message_thread_id: 77 }, id: "telegram:7001:-1001234567890:77" },
    { name: "reply thread in an ordinary group", fields: { message_thread_id: 55 }, id: "telegram:7001:-1001234567890" },
    {
      name: "thread id with is_topic_message false",
      fields: { is_topic_message: false, message_thread_id: 55 },
      id: "telegram:7001:-1001234567890",
    },
    { name: "topic flag without a thread id", fields: { is_topic_message: true }, id: "telegram:7001:-1001234567890" },
    { name: "private chat", fields: { chat: { id: 42, type: "private", first_name: "Ada" } }, id: "telegram:7001:42" },
  ])("keys a $name as $id", ({ fields, id }) => {
    const result = eventOf(ingest({ update_id: 1, message: message({ text: "t", ...fields }) }));
    expect(result.conversationId).toBe(id);
    expect(conversationIdSchema.safeParse(result.conversationId).success).toBe(true);
  });

  it("keys an edit in a forum topic to the topic's conversation", () => {
    const result = eventOf(
      ingest({ update_id: 1, edited_message: message({ text: "t", is_topic_message: true, message_thread_id: 77, edit_date: EDITED }) }),
    );
    expect(result.conversationId).toBe("telegram:7001:-1001234567890:77");
  });
});

describe("mapTelegramUpdate: ignored updates", () => {
  it.each([
    { name: "callback_query", raw: { update_id: 1, callback_query: { id: "q", from: ADA, data: "x" } } },
    {
      name: "my_chat_member",
      raw: { update_id: 2, my_chat_member: { chat: GROUP, from: ADA, date: SENT, old_chat_member: {}, new_chat_member: {} } },
    },
    { name: "inline_query", raw: { update_id: 3, inline_query: { id: "i", from: ADA, query: "q", offset: "" } } },
    { name: "bare update", raw: { update_id: 4 } },
  ])("acknowledges an unused update kind ($name) without an event", ({ raw }) => {
    expect(ingest(raw)).toEqual({ kind: "ignored", reason: "update kind not used" });
  });

  it.each([
    { name: "new_chat_members", fields: { new_chat_members: [ADA] } },
    { name: "left_chat_member", fields: { left_chat_member: ADA } },
    { name: "pinned_message", fields: { pinned_message: { message_id: 1, date: SENT, chat: GROUP } } },
    { name: "forum_topic_created", fields: { forum_topic_created: { name: "Ideas", icon_color: 1 } } },
  ])("ignores a service message ($name)", ({ fields }) => {
    expect(ingest({ update_id: 1, message: message(fields) })).toEqual({ kind: "ignored", reason: "service message without content" });
  });

  it("ignores an edit without content", () => {
    expect(ingest({ update_id: 1, edited_message: message({ edit_date: EDITED }) })).toEqual({
      kind: "ignored",
      reason: "edit without content",
    });
  });
});

describe("telegramUpdateSchema", () => {
  it.each([
    { name: "missing update_id", raw: { message: message({ text: "x" }) } },
    { name: "string update_id", raw: { update_id: "1", message: message({ text: "x" }) } },
    { name: "negative update_id", raw: { update_id: -1 } },
    { name: "fractional update_id", raw: { update_id: 1.5 } },
    { name: "string chat id", raw: { update_id: 1, message: message({ text: "x", chat: { id: "-100", type: "group" } }) } },
    { name: "string message_id", raw: { update_id: 1, message: message({ text: "x", message_id: "7" }) } },
    { name: "message without chat", raw: { update_id: 1, message: { message_id: 1, date: SENT, text: "x" } } },
    { name: "unknown chat type", raw: { update_id: 1, message: message({ text: "x", chat: { id: 1, type: "forum" } }) } },
    { name: "sender without first_name", raw: { update_id: 1, message: message({ text: "x", from: { id: 1 } }) } },
    { name: "not an object", raw: [1, 2] },
  ])("rejects a malformed update: $name", ({ raw }) => {
    expect(telegramUpdateSchema.safeParse(raw).success).toBe(false);
  });

  it("strips fields Foldline does not read", () => {
    const parsed = telegramUpdateSchema.parse({ update_id: 1, message: message({ text: "x", entities: [] }), poll_answer: {} });
    expect(parsed).not.toHaveProperty("poll_answer");
    expect(parsed.message).not.toHaveProperty("entities");
  });
});

// ---------------------------------------------------------------------------------------------

/** Messages within Telegram's own limits (names ≤ 64 characters, realistic dates). */
const fileArb = fc.record(
  { file_id: fc.string({ minLength: 1, maxLength: 20 }), file_unique_id: fc.string({ maxLength: 10 }) },
  { requiredKeys: ["file_id"] },
);
const messageArb = fc.record(
  {
    message_id: fc.integer({ min: 1, max: 2 ** 31 }),
    date: fc.integer({ min: 1_400_000_000, max: 2_000_000_000 }),
    chat: fc.record({
      id: fc.integer({ min: -1_009_999_999_999, max: 9_999_999_999 }),
      type: fc.constantFrom("private", "group", "supergroup", "channel"),
    }),
    from: fc.record(
      {
        id: fc.integer({ min: 1, max: 9_999_999_999 }),
        first_name: fc.string({ maxLength: 64 }),
        last_name: fc.string({ maxLength: 64 }),
        username: fc.stringMatching(/^[a-z][a-z0-9_]{4,31}$/),
      },
      { requiredKeys: ["id", "first_name"] },
    ),
    is_topic_message: fc.boolean(),
    message_thread_id: fc.integer({ min: 1, max: 1_000_000 }),
    reply_to_message: fc.record({ message_id: fc.integer({ min: 1, max: 2 ** 31 }) }),
    text: fc.string({ unit: "grapheme", maxLength: 200 }),
    caption: fc.string({ unit: "grapheme", maxLength: 200 }),
    photo: fc.array(fileArb, { minLength: 1, maxLength: 3 }),
    sticker: fileArb,
    voice: fileArb,
    location: fc.record({
      latitude: fc.double({ min: -90, max: 90, noNaN: true }),
      longitude: fc.double({ min: -180, max: 180, noNaN: true }),
    }),
    dice: fc.record({ emoji: fc.constantFrom("🎲", "🎯"), value: fc.integer({ min: 1, max: 6 }) }),
  },
  { requiredKeys: ["message_id", "date", "chat"] },
);
const CONTENT_KEYS = ["text", "caption", "photo", "sticker", "voice", "location", "dice"] as const;
const updateArb = fc.record(
  {
    update_id: fc.nat(),
    message: messageArb,
    edited_message: messageArb.map((m) => ({ ...m, edit_date: m.date + 60 })),
    channel_post: messageArb,
  },
  { requiredKeys: ["update_id"] },
);

describe("mapTelegramUpdate: properties", () => {
  it("maps every update within Telegram's limits to nothing or to a valid event in a valid conversation", () => {
    fc.assert(
      fc.property(updateArb, (raw) => {
        const result = ingest(raw);
        const chosen = raw.message ?? raw.channel_post ?? raw.edited_message;
        if (result.kind === "ignored") {
          expect(chosen === undefined || CONTENT_KEYS.every((key) => !(key in chosen))).toBe(true);
          return;
        }
        expect(eventInputSchema.safeParse(result.event).error).toBeUndefined();
        expect(conversationIdSchema.safeParse(result.conversationId).success).toBe(true);
        expect(result.event.idempotencyKey).toBe(`tg:update:${raw.update_id}`);
        expect(result.event.kind).toBe(raw.message !== undefined || raw.channel_post !== undefined ? "source" : "correction");
      }),
      { numRuns: 200 },
    );
  });
});
