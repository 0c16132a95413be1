/**
 * A Telegram bot on Workers that remembers its chats through Foldline (README.md beside this file).
 *
 * Telegram posts each update to /telegram/webhook. The Foldline plugin records the message (or the
 * edit) in the chat's conversation before the handlers run; a handler that answers composes the
 * agent's context with `ctx.foldline.compose`, asks the model, and replies; the plugin records the
 * reply as the agent's, with its Telegram message id. Foldline compacts the history off the request
 * path, so the context stays bounded however long the chat runs.
 */
import { createClient } from "foldline/client";
import { foldline } from "foldline/grammy";
import type { FoldlineFlavor } from "foldline/grammy";
import { Bot, webhookCallback } from "grammy";
import type { Context } from "grammy";
import type { UserFromGetMe } from "grammy/types";
import OpenAI from "openai";

interface Env {
  /** Foldline's RPC entrypoint (wrangler.toml, `services`). */
  readonly FOLDLINE: Fetcher;
  readonly FOLDLINE_TOKEN: string;
  readonly AGENT_ID: string;
  readonly BOT_TOKEN: string;
  readonly WEBHOOK_SECRET: string;
  /** The bot's getMe answer as JSON; without it grammY asks Telegram once per isolate. */
  readonly BOT_INFO?: string;
  readonly TELEGRAM_API_ROOT: string;
  readonly OPENAI_API_KEY: string;
  readonly OPENAI_BASE_URL: string;
}

type BotContext = Context & FoldlineFlavor;

/** Whether a message is for the bot: always in a private chat; in a group, when it names the bot or replies to it. */
function addressed(ctx: BotContext): boolean {
  const message = ctx.msg;
  if (message === undefined || ctx.chat?.type === "private") return message !== undefined;
  const mentioned = ctx.me.username !== undefined && (message.text ?? message.caption ?? "").includes(`@${ctx.me.username}`);
  return mentioned || message.reply_to_message?.from?.id === ctx.me.id;
}

function createBot(env: Env): Bot<BotContext> {
  const bot = new Bot<BotContext>(env.BOT_TOKEN, {
    ...(env.BOT_INFO === undefined ? {} : { botInfo: JSON.parse(env.BOT_INFO) as UserFromGetMe }),
    client: { apiRoot: env.TELEGRAM_API_ROOT },
  });
  const openai = new OpenAI({ apiKey: env.OPENAI_API_KEY, baseURL: env.OPENAI_BASE_URL });

  // Every message and edit is recorded, whether or not the bot answers it: that is the memory.
  bot.use(foldline({ client: createClient({ binding: env.FOLDLINE, token: env.FOLDLINE_TOKEN }), agent: env.AGENT_ID }));

  bot.on("message", async (ctx) => {
    if (!addressed(ctx)) return;
    const author = ctx.from?.first_name ?? "them";
    // The message is already the last turn of the history; the prompt says what to do with it.
    const words = ctx.msg.text ?? ctx.msg.caption ?? "";
    const { request } = await ctx.foldline.compose(`Answer ${author}'s last message in this chat, briefly.`, words === "" ? {} : { query: words });
    const completion = await openai.chat.completions.create(request);
    const text = completion.choices[0]?.message.content?.trim();
    if (text === undefined || text === "") return;
    // Recorded by the plugin as the agent's proposal and its delivery, with this message's id.
    await ctx.reply(text, { reply_parameters: { message_id: ctx.msg.message_id, allow_sending_without_reply: true } });
  });

  return bot;
}

/** One bot per isolate: its env does not change while the isolate lives. */
let handle: ((request: Request) => Promise<Response>) | undefined;

export default {
  async fetch(request, env): Promise<Response> {
    const url = new URL(request.url);
    if (request.method !== "POST" || url.pathname !== "/telegram/webhook") return new Response("not found", { status: 404 });
    handle ??= webhookCallback(createBot(env), "cloudflare-mod", { secretToken: env.WEBHOOK_SECRET });
    return handle(request);
  },
} satisfies ExportedHandler<Env>;
