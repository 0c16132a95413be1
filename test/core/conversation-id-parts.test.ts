import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { conversationChat, conversationIdSchema, TELEGRAM_BOT_ID, telegramChatRef, telegramConversationId, telegramRoute } from "../../src/core/conversation-id";

/**
 * The one owner of the conversation-id format takes apart exactly what it builds and what its
 * schema accepts: a route, a chat reference and a boundary's chat part agree with the id they
 * came from, and anything the schema refuses has no route.
 */

const botId = fc.bigInt({ min: 1n, max: 10n ** 12n }).map(String);
const chatId = fc.integer({ min: -(2 ** 52), max: 2 ** 52 });
const threadId = fc.option(fc.integer({ min: 1, max: 2 ** 31 }), { nil: undefined });

describe("telegram ids", () => {
  it("routes every id it builds back to its bot, chat and thread, and the schema accepts it", () => {
    fc.assert(
      fc.property(botId, chatId, threadId, (bot, chat, thread) => {
        const id = telegramConversationId(bot, chat, thread);
        expect(conversationIdSchema.safeParse(id).success).toBe(true);
        expect(telegramRoute(id)).toEqual(thread === undefined ? { botId: bot, chatId: chat } : { botId: bot, chatId: chat, threadId: thread });
        expect(conversationChat(id)).toEqual({ source: "telegram", chat: thread === undefined ? String(chat) : `${chat}:${thread}` });
      }),
    );
  });

  it.each([
    "api:telegram:1:2",
    "telegram:1",
    "telegram:x:2",
    "telegram:1:2:-3",
    "telegram:1:2:3:4",
    ` telegram:1:2`,
    `telegram:${"9".repeat(21)}:2`,
    `telegram:1:${"9".repeat(21)}`,
  ])("gives %j no route, and the schema refuses it as a Telegram id", (id) => {
    expect(telegramRoute(id)).toBeUndefined();
    expect(conversationIdSchema.safeParse(id).success && !id.startsWith("api:")).toBe(false);
  });

  it("reads an operator chat reference <bot>:<chat> and nothing else", () => {
    expect(telegramChatRef("7001:-1001234567890")).toEqual({ botId: "7001", chatId: -1001234567890 });
    for (const text of ["", "7001", "7001:", ":42", "a:42", "7001:42:1", "telegram:7001:42"]) expect(telegramChatRef(text)).toBeUndefined();
  });

  it("knows a bot id by digits alone", () => {
    expect(TELEGRAM_BOT_ID.test("7001")).toBe(true);
    for (const text of ["", "-1", "70 01", "7001\n", "9".repeat(21)]) expect(TELEGRAM_BOT_ID.test(text)).toBe(false);
  });
});

describe("api ids", () => {
  it("keep everything after api: as the chat, colons included", () => {
    expect(conversationChat("api:acme:support:ticket-42")).toEqual({ source: "api", chat: "acme:support:ticket-42" });
    expect(telegramRoute("api:acme:support")).toBeUndefined();
  });
});
