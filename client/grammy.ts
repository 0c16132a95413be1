/**
 * `foldline/grammy`: Foldline's memory for a grammY bot, as middleware (docs/CLIENT.md, "A grammY
 * bot"). `bot.use(foldline({ client, agent }))`:
 *
 * - records every message and edit of the update before the bot's handlers run, mapped by the very
 *   function Foldline's own Telegram webhook uses (src/core/telegram-message.ts), into the same
 *   conversation (`telegram:<botId>:<chatId>[:<topic>]`), so a bot can move between the webhook and
 *   the plugin without splitting its history;
 * - gives the handlers `ctx.foldline`: `compose`, `context` and `searchMemory`, bound to the update's
 *   conversation and the agent;
 * - records what the bot sends through `ctx.api` (`ctx.reply`, `ctx.api.sendMessage`…) as Foldline
 *   records a reply it dispatches itself (src/queue/reply-record.ts, reply-dispatch.ts): a
 *   `proposal` and its `delivery`, with the Telegram message id as `externalMessageId`.
 *
 * grammY is the bot's (a peer dependency): this module imports its types only, so it loads no
 * second copy of it, and bundles none. .dependency-cruiser.cjs holds it to that.
 */
import type { Context, MiddlewareFn, Transformer } from "grammy";
import { FoldlineError } from "./errors.js";
import type { FoldlineClient } from "./index.js";
import type { AppendedEvent, BatchEvent, ComposeRequest, ComposeResponse, ContextResponse, MemorySearch } from "./types.js";
import type { TelegramMessage, TelegramPlace } from "../src/core/telegram-message.js";
import { conversationOf, isoFromUnix, renderContent, telegramUpdateEvent } from "../src/core/telegram-message.js";

export interface FoldlineOptions {
  /** `createClient(…)` over HTTP or over a service binding; its token needs the bot's conversations (`telegram:<botId>:*`) and the agent. */
  readonly client: FoldlineClient;
  /** The agent whose context handlers compose, and whose replies the bot's messages are recorded as. */
  readonly agent: string;
  /**
   * Called when a message the bot sent could not be recorded (Foldline unreachable, a refused
   * event), and when an update conflicts with what Foldline holds under its id (`method: "update"`,
   * see `FoldlineContext.conflict`). The message is in the chat, so the call that sent it still
   * succeeds; default: `console.error`.
   */
  readonly onRecordError?: (error: unknown, sent: { readonly method: string; readonly conversation: string }) => void;
}

export interface ComposeOptions {
  /** What recalled memory is searched with; the prompt's text when absent. */
  readonly query?: string;
}

/** `ctx.foldline`: Foldline, bound to the update's conversation and the plugin's agent. */
export interface FoldlineContext {
  /** The update's conversation, as Foldline's webhook names it; undefined for updates outside a chat (inline queries…). */
  readonly conversation: string | undefined;
  readonly agent: string;
  /**
   * The event this update was recorded as: `duplicate: true` when Telegram delivered the update
   * again (the bot's earlier answer to it may already be in the chat). Undefined when the update
   * holds no message or edit to record.
   */
  readonly recorded: AppendedEvent | undefined;
  /**
   * Set when this update could not be recorded because Foldline holds another event under its
   * update id (`idempotency_conflict`: Telegram starts update ids afresh after a week without
   * updates, so an old id can come back with a new message). The update is then not in the
   * conversation's history (`recorded` is undefined), the bot's replies to it are recorded as
   * answering no message, and `onRecordError` was told. The handlers still run: the user asked.
   */
  readonly conflict: FoldlineError | undefined;
  /** One OpenAI chat-completions body: the agent's trusted documents, the verified history (the update's message is already in it), then `prompt`. */
  compose(prompt: string | ComposeRequest["prompt"], options?: ComposeOptions): Promise<ComposeResponse>;
  /** The agent's verified context: provider-ready messages and the private manifest. */
  context(options?: { readonly query?: string }): Promise<ContextResponse>;
  /** The agent's memory and the conversation's turns matching `q`, best first. */
  searchMemory(q: string, options?: { readonly limit?: number }): Promise<MemorySearch>;
}

/** The context flavor, as grammY plugins spell them: `type MyContext = Context & FoldlineFlavor`. */
export interface FoldlineFlavor {
  foldline: FoldlineContext;
}

/**
 * The plugin's idempotency keys and proposal ids, all built here. Foldline's own writers hold `tg:`,
 * `reply:`, `dispatch:` and `run:` (src/core/events.ts, `reservedForFoldline`), so the plugin writes
 * under `grammy:`; each key is made of Telegram's own ids, so a redelivered update or a resent
 * record is a replay (`duplicate`), never a second event.
 */
const pluginKeys = {
  update: (updateId: number): string => `grammy:update:${updateId}`,
  /** The bot's message `messageId` of its chat: the proposal it is recorded as, and its delivery. */
  sent: (messageId: number) => ({ proposalId: `tg-${messageId}`, proposal: `grammy:sent:${messageId}:proposal`, delivery: `grammy:sent:${messageId}:delivered` }),
  /** An edit of the bot's message: Telegram gives edits no id of their own (two may share a second), so each gets a fresh one. */
  edit: (messageId: number, nonce: string): string => `grammy:edit:${messageId}:${nonce}`,
  /** A send Telegram refused: no message id exists, so the proposal and its failed delivery share a fresh one. */
  failed: (nonce: string) => ({ proposalId: `tg-failed-${nonce}`, proposal: `grammy:failed:${nonce}:proposal`, delivery: `grammy:failed:${nonce}:delivery` }),
};

/** Bot API methods whose answer is the one message they put in the chat. */
const SENDS = new Set([
  "sendMessage",
  "sendPhoto",
  "sendVideo",
  "sendAnimation",
  "sendAudio",
  "sendDocument",
  "sendVoice",
  "sendVideoNote",
  "sendSticker",
  "sendLocation",
  "sendVenue",
  "sendContact",
  "sendPoll",
  "sendDice",
]);
/** Bot API methods whose answer is the message they changed (or `true`, for an inline message, which belongs to no chat). */
const EDITS = new Set(["editMessageText", "editMessageCaption"]);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** A Bot API answer's `result` that is a message in a chat (Telegram's `Message`). */
function sentMessage(result: unknown): TelegramMessage | undefined {
  if (!isRecord(result) || typeof result["message_id"] !== "number" || typeof result["date"] !== "number") return undefined;
  const chat = result["chat"];
  return isRecord(chat) && typeof chat["id"] === "number" && typeof chat["type"] === "string" ? (result as unknown as TelegramMessage) : undefined;
}

interface Recorder {
  readonly client: FoldlineClient;
  readonly agent: string;
  readonly botId: string;
  /** The update's conversation and the message in it the update was about: a reply there answers it. */
  readonly answering: { readonly conversation: string; readonly messageId: string } | undefined;
}

/** A reply in the update's conversation answers the update's message; one sent elsewhere answers nothing. */
const answeredIn = (recorder: Recorder, conversation: string): { replyToMessageId?: string } =>
  recorder.answering?.conversation === conversation ? { replyToMessageId: recorder.answering.messageId } : {};

/**
 * The events that record one Bot API call's answer, and the conversation they belong to; none for
 * calls that put nothing in a chat. `nonce` names what Telegram gives no id (an edit, a refusal),
 * `now` dates a refusal (a sent message carries Telegram's own date).
 */
function sentEvents(recorder: Recorder, call: { readonly method: string; readonly payload: unknown; readonly response: unknown }, nonce: string, now: Date): { conversation: string; events: BatchEvent[] } | undefined {
  const { method, payload, response } = call;
  if (!isRecord(response)) return undefined;
  if (response["ok"] === true) {
    const message = sentMessage(response["result"]);
    const content = message === undefined ? undefined : renderContent(message);
    if (message === undefined || content === undefined) return undefined;
    const conversation = conversationOf(recorder.botId, message);
    if (SENDS.has(method)) {
      const keys = pluginKeys.sent(message.message_id);
      const replyTo = answeredIn(recorder, conversation);
      return {
        conversation,
        events: [
          { kind: "proposal", idempotencyKey: keys.proposal, body: { proposalId: keys.proposalId, agentId: recorder.agent, ...replyTo, text: content.text } },
          { kind: "delivery", idempotencyKey: keys.delivery, body: { status: "delivered", proposalId: keys.proposalId, externalMessageId: String(message.message_id), at: isoFromUnix(message.date) } },
        ],
      };
    }
    if (EDITS.has(method)) {
      const target = pluginKeys.sent(message.message_id).proposalId;
      return {
        conversation,
        events: [
          {
            kind: "correction",
            idempotencyKey: pluginKeys.edit(message.message_id, nonce),
            body: { action: "edit", targetMessageId: target, text: content.text, editedAt: isoFromUnix(message.edit_date ?? message.date) },
          },
        ],
      };
    }
    return undefined;
  }
  // Refused by Telegram: nothing reached the chat. Recorded for a text message, as Foldline records
  // a dispatch that failed: the proposal and a failed delivery with Telegram's description.
  if (response["ok"] !== false || method !== "sendMessage" || !isRecord(payload)) return undefined;
  const chatId = payload["chat_id"];
  const text = payload["text"];
  const thread = payload["message_thread_id"];
  if (typeof chatId !== "number" || typeof text !== "string") return undefined;
  const place: TelegramPlace = typeof thread === "number" ? { chat: { id: chatId }, message_thread_id: thread, is_topic_message: true } : { chat: { id: chatId } };
  const conversation = conversationOf(recorder.botId, place);
  const keys = pluginKeys.failed(nonce);
  const replyTo = answeredIn(recorder, conversation);
  const reason = `telegram ${String(response["error_code"])}: ${String(response["description"])}`.slice(0, 1_000);
  return {
    conversation,
    events: [
      { kind: "proposal", idempotencyKey: keys.proposal, body: { proposalId: keys.proposalId, agentId: recorder.agent, ...replyTo, text } },
      { kind: "delivery", idempotencyKey: keys.delivery, body: { status: "failed", proposalId: keys.proposalId, reason, at: now.toISOString() } },
    ],
  };
}

function recordingTransformer(recorder: Recorder, report: NonNullable<FoldlineOptions["onRecordError"]>): Transformer {
  return async (prev, method, payload, signal) => {
    // A call that got no answer throws here: whether it reached the chat is unknown, so nothing is recorded.
    const response = await prev(method, payload, signal);
    const recorded = sentEvents(recorder, { method, payload, response }, crypto.randomUUID(), new Date());
    if (recorded !== undefined) {
      try {
        await recorder.client.appendBatch(recorded.conversation, recorded.events);
      } catch (error) {
        // The message is in the chat whatever happened here: the call that sent it succeeded.
        report(error, { method, conversation: recorded.conversation });
      }
    }
    return response;
  };
}

function noChat(): never {
  throw new FoldlineError({ code: "unsupported", message: "this update belongs to no chat, so it has no conversation: ctx.foldline is for updates in a chat" });
}

function bound(client: FoldlineClient, agent: string, conversation: string | undefined, recorded: AppendedEvent | undefined, conflict: FoldlineError | undefined): FoldlineContext {
  const inChat = (): string => conversation ?? noChat();
  return {
    conversation,
    agent,
    recorded,
    conflict,
    // Async, so an update outside a chat rejects like any other failed call rather than throwing.
    compose: async (prompt, options = {}) =>
      client.compose(inChat(), { agent, prompt: typeof prompt === "string" ? { text: prompt } : prompt, ...(options.query === undefined ? {} : { query: options.query }) }),
    context: async (options = {}) => client.context(inChat(), { agent, ...(options.query === undefined ? {} : { query: options.query }) }),
    searchMemory: async (q, options = {}) => client.searchMemory(inChat(), { agent, q, ...(options.limit === undefined ? {} : { limit: options.limit }) }),
  };
}

/** Where an update happened, when it records nothing (a button press, a member joining): its message's place, else its chat. */
function placeOf(ctx: Context): TelegramPlace | undefined {
  const message = ctx.msg;
  if (message !== undefined) return message;
  const chat = ctx.chat;
  return chat === undefined ? undefined : { chat };
}

export function foldline(options: FoldlineOptions): MiddlewareFn<Context & FoldlineFlavor> {
  const { client, agent } = options;
  const report = options.onRecordError ?? ((error: unknown, sent: { readonly method: string; readonly conversation: string }) => console.error(`foldline: ${sent.method === "update" ? "an update" : `${sent.method}, sent,`} in ${sent.conversation} was not recorded`, error));
  return async (ctx, next) => {
    const botId = String(ctx.me.id);
    const mapped = telegramUpdateEvent(botId, ctx.update, pluginKeys.update(ctx.update.update_id));
    let recorded: AppendedEvent | undefined;
    let conflict: FoldlineError | undefined;
    let answering: Recorder["answering"];
    if (mapped.kind === "event") {
      try {
        // Before the handlers run: if this throws, the bot answers Telegram with an error and
        // Telegram delivers the update again, so it is recorded once and answered once.
        recorded = await client.append(mapped.conversationId, mapped.event);
      } catch (error) {
        // The same update_id with other content: what Foldline holds under it stays the record (as
        // for the webhook), and retrying cannot change that. The handlers run, told so; nothing
        // records their replies as answering a message the record does not hold.
        if (!(error instanceof FoldlineError && error.code === "idempotency_conflict")) throw error;
        conflict = error;
        report(error, { method: "update", conversation: mapped.conversationId });
      }
      const { event } = mapped;
      if (conflict === undefined) answering = { conversation: mapped.conversationId, messageId: event.kind === "source" ? event.body.messageId : event.body.targetMessageId };
    }
    const place = placeOf(ctx);
    const conversation = mapped.kind === "event" ? mapped.conversationId : place === undefined ? undefined : conversationOf(botId, place);
    ctx.foldline = bound(client, agent, conversation, recorded, conflict);
    // On this update's `ctx.api` only (grammY builds one per update), so a reply knows the message it answers.
    ctx.api.config.use(recordingTransformer({ client, agent, botId, answering }, report));
    await next();
  };
}
