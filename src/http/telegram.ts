import { Hono } from "hono";
import { TELEGRAM_BOT_ID } from "../core/conversation-id";
import { eventInputSchema } from "../core/events";
import { secretsEqual } from "../core/secrets";
import { mapTelegramUpdate, telegramUpdateSchema } from "../core/telegram-update";
import { telegramWebhookSecret } from "../config";
import { appendToConversation } from "../durable/stub";
import { problem } from "./errors";
import type { telegramWebhookAnswerSchema, Wire } from "../api/responses";
import type { AppEnv } from "./types";
import { validate } from "../api/validation";
import { readJson } from "./validation";

/**
 * Telegram's webhook. Telegram retries any non-2xx answer for up to a day, so only requests that
 * are not Telegram's (bad secret, malformed body) and transient failures (D1 unavailable: nothing
 * was acknowledged, the retry will land) get one; everything Telegram sent validly gets a 200,
 * including updates Foldline does not use and redeliveries of updates already stored.
 */
export const telegram = new Hono<AppEnv>().post("/:bot/webhook", async (c) => {
  const bot = c.req.param("bot");
  const expected = TELEGRAM_BOT_ID.test(bot) ? telegramWebhookSecret(c.env, bot) : undefined;
  const presented = c.req.header("x-telegram-bot-api-secret-token");
  if (expected === undefined || presented === undefined || !secretsEqual(presented, expected)) {
    return problem(c, { code: "unauthorized", message: "unknown bot or wrong X-Telegram-Bot-Api-Secret-Token" });
  }
  const update = await readJson(c, telegramUpdateSchema);
  if (!update.ok) return problem(c, update.error);

  const mapped = mapTelegramUpdate(bot, update.value);
  if (mapped.kind === "ignored") return c.json({ ok: true, ignored: mapped.reason } satisfies Wire<typeof telegramWebhookAnswerSchema>);
  const event = validate(eventInputSchema, mapped.event);
  if (!event.ok) return problem(c, event.error);

  const appended = await appendToConversation(c.env, {
    conversationId: mapped.conversationId,
    events: [event.value],
  });
  if (!appended.ok) {
    // The same update_id with another body: the first delivery is the record; retrying cannot help.
    if (appended.error.code === "idempotency_conflict") {
      console.warn("telegram update redelivered with a different body", { bot, updateId: update.value.update_id });
      return c.json({ ok: true, ignored: "update_id already recorded with different content" } satisfies Wire<typeof telegramWebhookAnswerSchema>);
    }
    return problem(c, appended.error);
  }
  const [result] = appended.value.results;
  return c.json({ ok: true, seq: result?.event.seq, duplicate: result?.duplicate ?? false });
});
