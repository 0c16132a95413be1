import { env } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { sendMessage } from "../../src/telegram/bot-api";
import { deliverText } from "../../src/telegram/dispatch";
import type { RecordedRequest, ScriptStep } from "../fake-telegram/server";
import { FIRST_MESSAGE_ID } from "../fake-telegram/server";

/**
 * The Bot API client and the text dispatcher against the loopback fake Bot API
 * (test/fake-telegram): real fetch, real HTTP, nothing patched. Each test uses a session of its
 * own on the fake, so its script and recorded requests are its own even while other files run.
 */

const fakeOrigin = inject("fakeTelegramOrigin");
const BOT = "7001";
const TOKEN = "7001:test-token";
const CHAT = -1_001_234_567_890;

interface Recorded extends RecordedRequest {
  readonly body: { readonly [key: string]: unknown };
}

interface FakeSession {
  /** TELEGRAM_API_BASE_URL for this session. */
  readonly baseUrl: string;
  script(steps: readonly ScriptStep[]): Promise<void>;
  requests(): Promise<Recorded[]>;
}

function fakeSession(): FakeSession {
  const root = `${fakeOrigin}/s/${crypto.randomUUID()}`;
  return {
    baseUrl: root,
    async script(steps) {
      const response = await fetch(`${root}/__script`, { method: "POST", body: JSON.stringify(steps) });
      expect(response.status).toBe(204);
    },
    async requests() {
      const response = await fetch(`${root}/__requests`);
      return (await response.json()) as Recorded[];
    },
  };
}

/**
 * The Env pointed at one session. `wrangler types` narrows TELEGRAM_API_BASE_URL to its
 * wrangler.toml literal; at runtime a var is any string, so the test widens it here.
 */
function telegramEnv(baseUrl: string, secrets: { readonly [name: string]: string } = {}): Env {
  return { ...env, TELEGRAM_API_BASE_URL: baseUrl, ...secrets } as Env;
}

describe("sendMessage", () => {
  it("returns Telegram's message id and sends the chat, text, reply and topic", async () => {
    const fake = fakeSession();
    await fake.script([{ messageId: 4242 }]);

    const result = await sendMessage(telegramEnv(fake.baseUrl), BOT, { chatId: CHAT, text: "Done: 19:00, two people.", replyToMessageId: 77, messageThreadId: 5 });

    expect(result).toEqual({ ok: true, value: { messageId: 4242 } });
    const requests = await fake.requests();
    expect(requests).toHaveLength(1);
    expect(requests[0]).toEqual({
      token: TOKEN,
      method: "sendMessage",
      contentType: "application/json",
      body: {
        chat_id: CHAT,
        text: "Done: 19:00, two people.",
        reply_parameters: { message_id: 77, allow_sending_without_reply: true },
        message_thread_id: 5,
      },
    });
  });

  it("sends neither reply parameters nor a topic when none is given", async () => {
    const fake = fakeSession();

    const result = await sendMessage(telegramEnv(fake.baseUrl), BOT, { chatId: 42, text: "hello" });

    expect(result).toEqual({ ok: true, value: { messageId: FIRST_MESSAGE_ID } });
    const [request] = await fake.requests();
    expect(request?.body).toEqual({ chat_id: 42, text: "hello" });
  });

  it("reports a 429 as rate_limited with Telegram's retry_after", async () => {
    const fake = fakeSession();
    await fake.script([{ status: 429, retryAfter: 17 }]);

    const result = await sendMessage(telegramEnv(fake.baseUrl), BOT, { chatId: 42, text: "hello" });

    expect(result).toEqual({ ok: false, error: { kind: "rate_limited", retryAfterSeconds: 17, description: "Too Many Requests: retry after 17" } });
  });

  it("reports a 403 as forbidden with Telegram's description", async () => {
    const fake = fakeSession();
    await fake.script([{ status: 403 }]);

    const result = await sendMessage(telegramEnv(fake.baseUrl), BOT, { chatId: 42, text: "hello" });

    expect(result).toEqual({ ok: false, error: { kind: "forbidden", description: "Forbidden: bot was blocked by the user" } });
  });

  it("reports another 4xx as rejected with its status", async () => {
    const fake = fakeSession();
    await fake.script([{ status: 400, description: "Bad Request: message thread not found" }]);

    const result = await sendMessage(telegramEnv(fake.baseUrl), BOT, { chatId: 42, text: "hello", messageThreadId: 99 });

    expect(result).toEqual({ ok: false, error: { kind: "rejected", status: 400, description: "Bad Request: message thread not found" } });
  });

  it("reports a 500 as unavailable with its status", async () => {
    const fake = fakeSession();
    await fake.script([{ status: 500 }]);

    const result = await sendMessage(telegramEnv(fake.baseUrl), BOT, { chatId: 42, text: "hello" });

    expect(result).toEqual({ ok: false, error: { kind: "unavailable", status: 500, description: "Internal Server Error" } });
  });

  it("reports an answer that is not the Bot API's as unavailable, even with a 200", async () => {
    const fake = fakeSession();
    await fake.script([
      { status: 502, rawBody: "<html>bad gateway</html>" },
      { status: 200, rawBody: '{"ok":true,"result":{"text":"no id"}}' },
    ]);
    const telegram = telegramEnv(fake.baseUrl);

    const proxy = await sendMessage(telegram, BOT, { chatId: 42, text: "one" });
    const noId = await sendMessage(telegram, BOT, { chatId: 42, text: "two" });

    expect(proxy).toMatchObject({ ok: false, error: { kind: "unavailable", status: 502 } });
    expect(noId).toMatchObject({ ok: false, error: { kind: "unavailable", status: 200 } });
  });

  it("reports a dropped connection as unavailable, without the token in the description", async () => {
    // workerd logs the lost connection to stderr itself, even though the client catches it.
    const fake = fakeSession();
    await fake.script([{ hangUp: true }]);

    const result = await sendMessage(telegramEnv(fake.baseUrl), BOT, { chatId: 42, text: "hello" });

    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatchObject({ kind: "unavailable", status: null });
    expect(JSON.stringify(result.error)).not.toContain("test-token");
    expect(await fake.requests()).toHaveLength(1);
  });

  it("sends nothing for a bot without a token, or with a malformed one", async () => {
    const fake = fakeSession();
    const telegram = telegramEnv(fake.baseUrl, { TELEGRAM_BOT_TOKEN_7003: "not a token/../x" });

    const missing = await sendMessage(telegram, "7002", { chatId: 42, text: "hello" });
    const malformed = await sendMessage(telegram, "7003", { chatId: 42, text: "hello" });

    expect(missing).toMatchObject({ ok: false, error: { kind: "not_sent", reason: "no_token" } });
    expect(malformed).toMatchObject({ ok: false, error: { kind: "not_sent", reason: "no_token" } });
    expect(await fake.requests()).toEqual([]);
  });
});

describe("deliverText", () => {
  it("sends a 9,000-character text as three messages in order, only the first replying", async () => {
    const fake = fakeSession();
    const paragraph = (n: number): string => `Paragraph ${n}. ${"word ".repeat(295).trim()}`;
    const text = Array.from({ length: 6 }, (_, i) => paragraph(i + 1)).join("\n\n");
    expect(text.length).toBeGreaterThanOrEqual(8_900);
    expect(text.length).toBeLessThanOrEqual(9_000);

    const result = await deliverText(telegramEnv(fake.baseUrl), { botId: BOT, chatId: CHAT, threadId: 5, replyToMessageId: 77, text });

    expect(result).toEqual({ ok: true, value: { messageIds: [FIRST_MESSAGE_ID, FIRST_MESSAGE_ID + 1, FIRST_MESSAGE_ID + 2] } });
    const requests = await fake.requests();
    expect(requests.map((request) => request.body["message_thread_id"])).toEqual([5, 5, 5]);
    expect(requests.map((request) => request.body["reply_parameters"])).toEqual([{ message_id: 77, allow_sending_without_reply: true }, undefined, undefined]);
    const texts = requests.map((request) => String(request.body["text"]));
    // Split at paragraph breaks: two whole paragraphs a message, in order.
    expect(texts).toEqual([0, 2, 4].map((i) => `${paragraph(i + 1)}\n\n${paragraph(i + 2)}`));
  });

  it("stops at the first failure and says how many parts reached the chat", async () => {
    const fake = fakeSession();
    await fake.script([{}, { status: 429, retryAfter: 3 }]);
    const text = `${"a ".repeat(1_500)}\n\n${"b ".repeat(1_500)}\n\n${"c ".repeat(1_500)}`;

    const result = await deliverText(telegramEnv(fake.baseUrl), { botId: BOT, chatId: 42, replyToMessageId: 9, text });

    expect(result).toEqual({
      ok: false,
      error: { kind: "rate_limited", retryAfterSeconds: 3, description: "Too Many Requests: retry after 3", sentParts: 1, sentMessageIds: [FIRST_MESSAGE_ID] },
    });
    // The third part was never attempted.
    expect(await fake.requests()).toHaveLength(2);
  });

  it("sends nothing for a blank text or a bot without a token", async () => {
    const fake = fakeSession();
    const telegram = telegramEnv(fake.baseUrl);

    const blank = await deliverText(telegram, { botId: BOT, chatId: 42, text: " \n\n " });
    const noToken = await deliverText(telegram, { botId: "7002", chatId: 42, text: "hello" });

    expect(blank).toMatchObject({ ok: false, error: { kind: "not_sent", reason: "empty_text", sentParts: 0 } });
    expect(noToken).toMatchObject({ ok: false, error: { kind: "not_sent", reason: "no_token", sentParts: 0, sentMessageIds: [] } });
    expect(await fake.requests()).toEqual([]);
  });
});
