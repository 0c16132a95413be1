import { OpenAPIHono } from "@hono/zod-openapi";
import { TELEGRAM_BOT_ID } from "../core/conversation-id";
import { eventInputSchema } from "../core/events";
import { secretsEqual } from "../core/secrets";
import { mapTelegramUpdate, telegramUpdateSchema } from "../core/telegram-update";
import { telegramWebhookSecret } from "../config";
import { appendToConversation } from "../durable/stub";
import { logger } from "../logger";
import { problem } from "./errors";
import type { Wire } from "../api/responses";
import { telegramWebhookAnswerSchema } from "../api/responses";
import type { AppEnv } from "./types";
import { validate } from "../api/validation";
import { readJson } from "./validation";
import { operation, pathParameter, TELEGRAM_SECRET } from "./openapi/operation";
import { BODY_CODES, problems } from "./openapi/problem";
import { jsonBody, jsonResponse } from "./openapi/schemas";

const webhook = operation({
  method: "post",
  path: "/{bot}/webhook",
  operationId: "telegramWebhook",
  tags: ["telegram"],
  summary: "Telegram webhook",
  description:
    "Telegram ingress. `message`/`channel_post` become sources, `edited_message`/`edited_channel_post` corrections; " +
    "`update_id` is the idempotency key (`tg:update:<id>`). Every update Telegram sent validly is answered 200, including " +
    "kinds that are not used and redeliveries, because Telegram retries non-2xx answers for a day; a storage failure a retry " +
    "will fix is answered 503 `unavailable`, so Telegram delivers the update again and it is stored once.",
  security: TELEGRAM_SECRET,
  parameters: [pathParameter("bot")],
  request: { body: jsonBody("TelegramUpdate", telegramUpdateSchema) },
  responses: {
    200: jsonResponse("stored (`seq`, `duplicate`), or `ignored` with the reason", "TelegramWebhookAnswer", telegramWebhookAnswerSchema),
    ...problems(["unauthorized", "unavailable"], BODY_CODES),
  },
});

/**
 * Telegram's webhook. Telegram retries any non-2xx answer for up to a day, so only requests that
 * are not Telegram's (bad secret, malformed body) and failures a retry will fix (a storage call that
 * failed, shards that cannot take the chat: 503 `unavailable` from `app.onError`, and the redelivery
 * is stored once) get one; everything Telegram sent validly gets a 200,
 * including updates Foldline does not use and redeliveries of updates already stored.
 */
export const telegram = new OpenAPIHono<AppEnv>().openapi(webhook, async (c) => {
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
      logger.warn("webhook.conflict", { conversationId: mapped.conversationId, updateId: update.value.update_id });
      return c.json({ ok: true, ignored: "update_id already recorded with different content" } satisfies Wire<typeof telegramWebhookAnswerSchema>);
    }
    return problem(c, appended.error);
  }
  const [result] = appended.value.results;
  return c.json({ ok: true, seq: result?.event.seq, duplicate: result?.duplicate ?? false });
});
