import { exports } from "cloudflare:workers";
import { Bot } from "grammy";
import type { Context } from "grammy";
import type { Update, UserFromGetMe } from "grammy/types";
import { describe, expect, it } from "vitest";
import type { FoldlineClient } from "../../client/index";
import { createClient, FoldlineError } from "../../client/index";
import type { FoldlineFlavor } from "../../client/grammy";
import { foldline } from "../../client/grammy";
import { mapTelegramUpdate, telegramUpdateSchema } from "../../src/core/telegram-update";
import { BOT_ID, call, json, tokenFor, webhook } from "../integration/helpers";
import { pair } from "../support/declarations";

/**
 * `foldline/grammy` in a real grammY bot, against the real Worker over a service binding to its RPC
 * entrypoint (`exports.FoldlineRpc`). Telegram is the network edge: grammY's `fetch` answers as the
 * Bot API does (a sent message with its id, an edited one, a refusal), recording every call. The
 * bot is the test Worker's own Telegram bot (BOT_ID, whose webhook secret the test env holds), so
 * the same chat can be posted through Foldline's webhook and through the plugin.
 */

type BotContext = Context & FoldlineFlavor;

const BOT_INFO: UserFromGetMe = {
  id: Number(BOT_ID),
  is_bot: true,
  first_name: "Helper",
  username: "helper_test_bot",
  can_join_groups: true,
  can_read_all_group_messages: true,
  can_manage_bots: false,
  supports_inline_queries: false,
  supports_join_request_queries: false,
  can_connect_to_business: false,
  has_main_web_app: false,
  has_topics_enabled: false,
  allows_users_to_create_topics: false,
};
const ADA = { id: 4201, is_bot: false, first_name: "Ada", last_name: "Lovelace", username: "ada" };
const SENT = 1_790_000_000;

interface TelegramCall {
  readonly method: string;
  readonly payload: Record<string, unknown>;
}

/** The Bot API at the network edge: sends get ids from 5001 up, edits answer the edited message, chats `refuse` picks answer 403. */
function telegram(refuse: (chatId: number) => boolean = () => false) {
  const calls: TelegramCall[] = [];
  let nextId = 5001;
  const fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const method = String(input).split("/").at(-1) ?? "";
    const payload = JSON.parse(String(init?.body ?? "{}")) as Record<string, unknown>;
    calls.push({ method, payload });
    const chatId = payload["chat_id"] as number;
    if (refuse(chatId)) return Response.json({ ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" }, { status: 403 });
    const chat = { id: chatId, type: chatId < 0 ? "supergroup" : "private" };
    const from = { id: BOT_INFO.id, is_bot: true, first_name: BOT_INFO.first_name };
    const thread = typeof payload["message_thread_id"] === "number" ? { message_thread_id: payload["message_thread_id"], is_topic_message: true } : {};
    const reply = payload["reply_parameters"] as { message_id?: number } | undefined;
    const replyTo = reply?.message_id === undefined ? {} : { reply_to_message: { message_id: reply.message_id, date: SENT, chat } };
    if (method === "sendMessage") return Response.json({ ok: true, result: { message_id: nextId++, date: SENT + 5, chat, from, text: payload["text"], ...thread, ...replyTo } });
    if (method === "sendPhoto") {
      const photo = [{ file_id: String(payload["photo"]), file_unique_id: "u-photo", width: 90, height: 90 }];
      return Response.json({ ok: true, result: { message_id: nextId++, date: SENT + 5, chat, from, photo, caption: payload["caption"], ...thread } });
    }
    if (method === "editMessageText") {
      return Response.json({ ok: true, result: { message_id: payload["message_id"], date: SENT + 5, edit_date: SENT + 9, chat, from, text: payload["text"] } });
    }
    if (method === "sendChatAction") return Response.json({ ok: true, result: true });
    return Response.json({ ok: false, error_code: 404, description: "Not Found: method not found" }, { status: 404 });
  };
  return { calls, fetch: fetch as typeof globalThis.fetch };
}

let counter = 0;
/** A group chat of this test's own: storage is shared by the tests of a file. */
const freshChat = (): number => -(1_009_000_000_000 + Math.floor(Math.random() * 1_000_000_000) * 10 + (counter++ % 10));
let updateIds = Math.floor(Math.random() * 1_000_000_000);

/** A fresh agent serving one fresh chat (and its topics), a bot with the plugin, and the Bot API it talks to. */
async function setup(options: { refuse?: (chatId: number) => boolean; client?: (client: FoldlineClient) => FoldlineClient } = {}) {
  const chat = freshChat();
  const agentId = `grammy-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(`telegram:${BOT_ID}:*`, `agent:${agentId}*`);
  const real = createClient({ binding: exports.FoldlineRpc, token, fetcher: exports.default });
  const sources = [conversationOf(chat), `${conversationOf(chat)}:*`];
  const registered = await real.registerAgent(agentId, pair({ agentId, sources, admitSensitive: true }));
  expect(registered).toMatchObject({ agentId, revision: 1 });
  const api = telegram(options.refuse);
  const bot = new Bot<BotContext>("7001:test-token", { botInfo: BOT_INFO, client: { fetch: api.fetch } });
  const recordErrors: unknown[] = [];
  bot.use(foldline({ client: options.client?.(real) ?? real, agent: agentId, onRecordError: (error) => recordErrors.push(error) }));
  return { chat, agentId, token, client: real, bot, api, recordErrors };
}

const conversationOf = (chatId: number, topic?: number) => `telegram:${BOT_ID}:${chatId}${topic === undefined ? "" : `:${topic}`}`;

function message(chatId: number, messageId: number, text: string, extra: Record<string, unknown> = {}) {
  return { message_id: messageId, date: SENT, chat: { id: chatId, type: "supergroup", title: "Team" }, from: ADA, text, ...extra };
}

const update = (fields: Record<string, unknown>): Update => ({ update_id: updateIds++, ...fields }) as unknown as Update;

/** The conversation's log less its runs: Foldline's own bookkeeping (each compactor's preflight of each message). */
async function log(client: FoldlineClient, conversation: string) {
  const page = await client.request("get", "/v1/conversations/{conversation}/events", { path: { conversation }, query: { after: 0, limit: 500 } });
  return page.events.filter((event) => event.kind !== "run");
}

/** The event without what the log and the key add: the part the mapping decides. */
const mapped = (event: { kind: string; sensitive?: boolean; body: unknown }) => ({ kind: event.kind, sensitive: event.sensitive, body: event.body });

describe("foldline/grammy: what comes in", () => {
  it("records each message and edit before the handlers run, as Foldline's webhook maps it, in the webhook's conversation", async () => {
    const { chat, client, bot } = await setup();
    const conversation = conversationOf(chat);
    const seen: unknown[] = [];
    bot.on(["message", "edited_message"], async (ctx) => {
      // The update is already in the log when a handler runs: the newest event, the one `recorded` names.
      const events = await log(client, conversation);
      seen.push(ctx.foldline.conversation, events.length, events.at(-1)?.seq === ctx.foldline.recorded?.event.seq);
    });

    const posted = update({ message: message(chat, 11, "Lisbon in May?", { reply_to_message: { message_id: 10, date: SENT, chat: { id: chat, type: "supergroup" } } }) });
    const edit = update({ edited_message: message(chat, 11, "Lisbon in June?", { edit_date: SENT + 60 }) });
    await bot.handleUpdate(posted);
    await bot.handleUpdate(edit);

    const events = await log(client, conversation);
    expect(events.map((e) => [e.kind, e.idempotencyKey])).toEqual([
      ["source", `grammy:update:${posted.update_id}`],
      ["correction", `grammy:update:${edit.update_id}`],
    ]);
    // The same events the webhook writes for these updates (its key aside), in the same conversation.
    for (const [i, raw] of [posted, edit].entries()) {
      const byWebhook = mapTelegramUpdate(BOT_ID, telegramUpdateSchema.parse(raw));
      if (byWebhook.kind !== "event") throw new Error("the webhook ignores this update");
      expect(byWebhook.conversationId).toBe(conversation);
      expect(mapped(events[i] as never)).toEqual(mapped(byWebhook.event));
    }
    expect(seen).toEqual([conversation, 1, true, conversation, 2, true]);
  });

  it("continues the conversation Foldline's webhook started: switching modes does not split the history", async () => {
    const { chat, client, bot } = await setup();
    const byWebhook = await webhook(update({ message: message(chat, 1, "We set the budget at 4k.") }));
    expect(byWebhook.status).toBe(200);
    await bot.handleUpdate(update({ message: message(chat, 2, "And the venue is Lisbon.") }));

    const events = await log(client, conversationOf(chat));
    expect(events.map((e) => [e.kind, e.idempotencyKey.split(":").slice(0, 2).join(":"), e.kind === "source" ? e.body.text : ""])).toEqual([
      ["source", "tg:update", "We set the budget at 4k."],
      ["source", "grammy:update", "And the venue is Lisbon."],
    ]);
  });

  it("names a forum topic's conversation as the webhook does, and records a photo's caption with its marker", async () => {
    const { chat, client, bot } = await setup();
    const photo = [{ file_id: "AgAD-photo", file_unique_id: "uniq-1", width: 90, height: 90 }];
    await bot.handleUpdate(update({ message: message(chat, 30, "", { text: undefined, caption: "the venue", photo, message_thread_id: 7, is_topic_message: true }) }));

    const [event] = await log(client, conversationOf(chat, 7));
    expect(event).toMatchObject({ kind: "source", body: { text: "[photo] the venue", attachments: [{ type: "photo", fileId: "AgAD-photo", fileUniqueId: "uniq-1" }] } });
    expect(await log(client, conversationOf(chat))).toEqual([]);
  });

  it("records a redelivered update once, and says it is one", async () => {
    const { chat, client, bot } = await setup();
    const recorded: (boolean | undefined)[] = [];
    bot.on("message", (ctx) => {
      recorded.push(ctx.foldline.recorded?.duplicate);
    });
    const again = update({ message: message(chat, 40, "Is the hotel booked?") });
    await bot.handleUpdate(again);
    await bot.handleUpdate(again);
    expect(recorded).toEqual([false, true]);
    expect(await log(client, conversationOf(chat))).toHaveLength(1);
  });

  it("tells the handler when an update conflicts with what Foldline holds under its id, records its replies as answering nothing, and reports it", async () => {
    const { chat, agentId, client, bot, recordErrors } = await setup();
    const seen: { recorded: unknown; conflict: string | undefined }[] = [];
    bot.on("message:text", async (ctx) => {
      seen.push({ recorded: ctx.foldline.recorded, conflict: ctx.foldline.conflict?.code });
      await ctx.reply("Noted.");
    });
    // Telegram starts update ids afresh after a week without updates: an id already recorded comes back with another message.
    const first = update({ message: message(chat, 70, "The budget is 4000 euros.") });
    await bot.handleUpdate(first);
    await bot.handleUpdate({ ...first, message: message(chat, 71, "Cancel the hotel.") } as unknown as Update);

    expect(seen.map((s) => s.conflict)).toEqual([undefined, "idempotency_conflict"]);
    expect(seen[1]?.recorded).toBeUndefined();
    expect(recordErrors).toEqual([expect.objectContaining({ code: "idempotency_conflict" })]);
    const events = await log(client, conversationOf(chat));
    expect(events.filter((e) => e.kind === "source").map((e) => e.kind === "source" && e.body.text)).toEqual(["The budget is 4000 euros."]);
    // The first reply answers message 70; the second answers nothing the record holds, so it names none.
    expect(events.filter((e) => e.kind === "proposal").map((e) => e.body)).toEqual([
      { proposalId: "tg-5001", agentId, replyToMessageId: "70", text: "Noted." },
      { proposalId: "tg-5002", agentId, text: "Noted." },
    ]);
  });

  it("records nothing for an update without a message, and still binds ctx.foldline to its chat", async () => {
    const { chat, client, bot } = await setup();
    const conversations: (string | undefined)[] = [];
    bot.use((ctx) => {
      conversations.push(ctx.foldline.conversation);
    });
    // A member joining: a message without content, which the webhook ignores too.
    await bot.handleUpdate(update({ message: message(chat, 50, "", { text: undefined, new_chat_members: [ADA] }) }));
    // A button press on one of the bot's messages.
    await bot.handleUpdate(update({ callback_query: { id: "cb-1", from: ADA, chat_instance: "ci", data: "yes", message: message(chat, 51, "Pick one") } }));
    expect(conversations).toEqual([conversationOf(chat), conversationOf(chat)]);
    expect(await log(client, conversationOf(chat))).toEqual([]);
  });

  it("fails the update when Foldline cannot record it, before any handler runs, so Telegram delivers it again", async () => {
    const unavailable = new FoldlineError({ code: "unavailable", message: "later", status: 503 });
    const { chat, bot } = await setup({ client: (real) => ({ ...real, append: () => Promise.reject(unavailable) }) });
    let handled = false;
    bot.on("message", () => {
      handled = true;
    });
    await expect(bot.handleUpdate(update({ message: message(chat, 60, "hello") }))).rejects.toThrow("later");
    expect(handled).toBe(false);
  });
});

describe("foldline/grammy: ctx.foldline", () => {
  it("composes, serves context and searches in the update's conversation, for the plugin's agent", async () => {
    const { chat, agentId, bot } = await setup();
    const results: unknown[] = [];
    bot.on("message", async (ctx) => {
      const composed = await ctx.foldline.compose("Answer Ada briefly.", { query: "ferry" });
      const context = await ctx.foldline.context();
      const found = await ctx.foldline.searchMemory("ferry", { limit: 5 });
      results.push(composed.request.messages.map((m) => [m.role, m.content]), composed.manifest.agentId, context.manifest.conversationId, found.results.length > 0);
    });
    await bot.handleUpdate(update({ message: message(chat, 70, "The ferry leaves at 6.") }));
    expect(results).toEqual([
      [
        ["user", "Ada Lovelace: The ferry leaves at 6."],
        ["user", "Answer Ada briefly."],
      ],
      agentId,
      conversationOf(chat),
      true,
    ]);
  });

  it("refuses, as `unsupported`, an update that belongs to no chat", async () => {
    const { bot } = await setup();
    const errors: unknown[] = [];
    bot.on("inline_query", async (ctx) => {
      expect(ctx.foldline.conversation).toBeUndefined();
      await ctx.foldline.context().catch((error: unknown) => errors.push(error));
    });
    await bot.handleUpdate(update({ inline_query: { id: "iq-1", from: ADA, query: "ferry", offset: "" } }));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(FoldlineError);
    expect((errors[0] as FoldlineError).code).toBe("unsupported");
  });
});

describe("foldline/grammy: what the bot sends", () => {
  it("records each reply as the agent's proposal and its delivery, with the Telegram message id, as Foldline records a dispatch", async () => {
    const { chat, agentId, client, bot, api } = await setup();
    bot.on("message:text", async (ctx) => {
      const sent = await ctx.reply("Lisbon, in May.", { reply_parameters: { message_id: ctx.msg.message_id } });
      await ctx.api.editMessageText(chat, sent.message_id, "Lisbon, in June.");
      await ctx.replyWithPhoto("AgAD-map", { caption: "the map" });
    });
    await bot.handleUpdate(update({ message: message(chat, 80, "Where is the offsite?") }));

    expect(api.calls.map((c) => c.method)).toEqual(["sendMessage", "editMessageText", "sendPhoto"]);
    const events = await log(client, conversationOf(chat));
    expect(events.map((e) => [e.kind, e.idempotencyKey.replace(/:[0-9a-f-]{36}$/, ":<nonce>")])).toEqual([
      ["source", expect.stringMatching(/^grammy:update:/)],
      ["proposal", "grammy:sent:5001:proposal"],
      ["delivery", "grammy:sent:5001:delivered"],
      ["correction", "grammy:edit:5001:<nonce>"],
      ["proposal", "grammy:sent:5002:proposal"],
      ["delivery", "grammy:sent:5002:delivered"],
    ]);
    // The shapes of src/queue/reply-record.ts and reply-dispatch.ts: the proposal answers the message, the delivery names Telegram's id.
    expect(events.slice(1).map((e) => e.body)).toEqual([
      { proposalId: "tg-5001", agentId, replyToMessageId: "80", text: "Lisbon, in May." },
      { status: "delivered", proposalId: "tg-5001", externalMessageId: "5001", at: new Date((SENT + 5) * 1000).toISOString() },
      { action: "edit", targetMessageId: "tg-5001", text: "Lisbon, in June.", editedAt: new Date((SENT + 9) * 1000).toISOString() },
      { proposalId: "tg-5002", agentId, replyToMessageId: "80", text: "[photo] the map" },
      { status: "delivered", proposalId: "tg-5002", externalMessageId: "5002", at: new Date((SENT + 5) * 1000).toISOString() },
    ]);

    // The agent is served its delivered replies as its own turns, in the group of the message they answer.
    const context = await client.context(conversationOf(chat), { agent: agentId });
    expect(context.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "Ada Lovelace: Where is the offsite?"],
      ["assistant", "Lisbon, in May."],
      ["assistant", "[photo] the map"],
    ]);
  });

  it("records a send Telegram refused as a proposal with a failed delivery, and the bot still gets Telegram's error", async () => {
    const { chat, agentId, client, bot } = await setup({ refuse: (id) => id < 0 });
    const errors: string[] = [];
    bot.on("message", async (ctx) => {
      await ctx.reply("Noted.").catch((error: unknown) => errors.push(String(error)));
    });
    await bot.handleUpdate(update({ message: message(chat, 90, "Book it.") }));

    expect(errors).toEqual([expect.stringContaining("403")]);
    const [, proposal, delivery] = await log(client, conversationOf(chat));
    expect(proposal).toMatchObject({ kind: "proposal", body: { agentId, replyToMessageId: "90", text: "Noted." } });
    expect(delivery).toMatchObject({ kind: "delivery", body: { status: "failed", reason: "telegram 403: Forbidden: bot was blocked by the user" } });
    expect(delivery?.kind === "delivery" && proposal?.kind === "proposal" && delivery.body.proposalId === proposal.body.proposalId).toBe(true);
  });

  it("does not fail a send that reached the chat when recording it fails, and reports it", async () => {
    const refused = new FoldlineError({ code: "unavailable", message: "later", status: 503 });
    const { chat, bot, api, recordErrors } = await setup({ client: (real) => ({ ...real, appendBatch: () => Promise.reject(refused) }) });
    const sent: number[] = [];
    bot.on("message", async (ctx) => {
      sent.push((await ctx.reply("On it.")).message_id);
    });
    await bot.handleUpdate(update({ message: message(chat, 95, "Can you book?") }));
    expect(sent).toEqual([5001]);
    expect(api.calls.map((c) => c.method)).toEqual(["sendMessage"]);
    expect(recordErrors).toEqual([refused]);
  });

  it("records what the bot sends into a forum topic in that topic's conversation", async () => {
    const { chat, client, bot } = await setup();
    bot.on("message", async (ctx) => {
      await ctx.reply("In the topic.", { message_thread_id: 7 });
    });
    await bot.handleUpdate(update({ message: message(chat, 100, "Topic question", { message_thread_id: 7, is_topic_message: true }) }));
    const events = await log(client, conversationOf(chat, 7));
    expect(events.map((e) => e.kind)).toEqual(["source", "proposal", "delivery"]);
    expect(events[1]).toMatchObject({ body: { replyToMessageId: "100", text: "In the topic." } });
  });
});

describe("foldline/grammy over HTTP", () => {
  it("records through a client over HTTP just as over the binding", async () => {
    // The plugin over HTTP to the Worker's own fetch handler, beside the binding: the same log.
    const { chat, agentId } = await setup();
    const token = await tokenFor(`telegram:${BOT_ID}:*`, `agent:${agentId}`);
    const overHttp = createClient({ baseUrl: "https://foldline.test", token, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });
    const bot = new Bot<BotContext>("7001:test-token", { botInfo: BOT_INFO, client: { fetch: telegram().fetch } });
    bot.use(foldline({ client: overHttp, agent: agentId }));
    await bot.handleUpdate(update({ message: message(chat, 110, "Over HTTP.") }));
    const response = await call("GET", `/v1/conversations/${encodeURIComponent(conversationOf(chat))}/events?after=0&limit=10`, { token });
    const body = await json<{ events: { kind: string; body: { text: string } }[] }>(response);
    expect(body.events.filter((e) => e.kind !== "run").map((e) => [e.kind, e.body.text])).toEqual([["source", "Over HTTP."]]);
  });
});
