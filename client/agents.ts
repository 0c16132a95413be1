/**
 * `foldline/agents`: Foldline's memory for the Cloudflare Agents SDK's Sessions (`agents/sessions`,
 * the store `AIChatAgent` and `Think` keep their messages in), docs/CLIENT.md, "The Agents SDK".
 *
 * - **What is said is recorded** (`mirrorToFoldline`): the Sessions change feed, which dispatches
 *   every durable write in order and awaits its listeners, is mirrored into the conversation's log.
 *   A user message is that person's source message; an assistant message is the agent's proposal,
 *   delivered (the session holds what was shown), replying to the user message before it; an edit
 *   of a user message is an `edit` correction, its deletion a `delete` correction. Each event's key
 *   is derived from the session message, so mirroring it again is a replay, never a second event.
 * - **Nothing is lost**: a write whose mirror failed (Foldline unreachable) is reported to
 *   `onError`, and `catchUp` walks the session's active path and records what the log is missing.
 * - **The history is Foldline's** (`foldlineMessages`): the agent's verified context (boundary,
 *   amendments, recalled memory, exact tail) as AI SDK model messages, in place of the session's
 *   transcript, bounded whatever the conversation's length.
 * - **What does not map** (the log is immutable and linear): `clearMessages` clears the session,
 *   never the log; an assistant message edited or deleted after it was recorded keeps its recorded
 *   text (reported as `unsupported`); a branch's messages are recorded in the order they were written;
 *   compaction overlays are the session's own and are not recorded (Foldline compacts the log itself).
 *
 * The Agents SDK is the bot's (an optional peer dependency): this module imports its types only.
 * .dependency-cruiser.cjs holds it to that.
 */
import type { Session, SessionChangeEvent, SessionMessage, Sessions } from "agents/sessions";
import { FoldlineError } from "./errors.js";
import type { FoldlineClient } from "./index.js";
import type { BatchEvent, ContextResponse } from "./types.js";

type Author = { readonly id: string; readonly name?: string; readonly username?: string };

export interface FoldlineMirrorOptions {
  /** `createClient(…)`; its token needs the conversation (and the agent, for `foldlineMessages`). */
  readonly client: FoldlineClient;
  readonly conversation: string;
  /** The agent the session's assistant messages are recorded as. */
  readonly agent: string;
  /** Who a user message is from (default: one author, `user`). */
  readonly author?: (message: SessionMessage) => Author;
  /** Whether a user message is sensitive (default: none is). */
  readonly sensitive?: (message: SessionMessage) => boolean;
  /** The session mirrored (default `""`, the primary session). */
  readonly sessionId?: string;
  /** A write that could not be mirrored (default: `console.error`). `catchUp` records what it missed. */
  readonly onError?: (error: unknown, event: SessionChangeEvent) => void;
  /**
   * How long a session write waits for the log (default 30,000 ms): past it the write goes on, the
   * miss is reported to `onError` (code `network`), and `catchUp` records it. The late call may
   * still land; recorded again, it is a replay.
   */
  readonly timeoutMs?: number;
}

const DEFAULT_MIRROR_TIMEOUT_MS = 30_000;

const DEFAULT_AUTHOR: Author = { id: "user" };

/** The text a session message says: its text parts, in order. */
const textOf = (message: SessionMessage): string =>
  message.parts.flatMap((part) => (part.type === "text" && "text" in part && typeof part.text === "string" ? [part.text] : [])).join("\n");

const SAFE_ID = /^[\x21-\x7e]{1,100}$/;

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * The log's id for a session message: `ag-<session>:<id>`, or a digest of the two when they are not
 * short printable ASCII (the log's ids are); the same message always gets the same id.
 */
async function messageIdOf(sessionId: string, id: string): Promise<string> {
  const plain = `${sessionId}:${id}`;
  return SAFE_ID.test(plain) ? `ag-${plain}` : `ag-h${(await sha256Hex(`${sessionId}\u0000${id}`)).slice(0, 40)}`;
}

/** The keys this module writes under (Foldline's own writers hold `tg:`, `reply:`, `dispatch:` and `run:`). */
const keys = {
  source: (messageId: string): string => `agents:source:${messageId}`,
  proposal: (messageId: string): string => `agents:proposal:${messageId}`,
  delivery: (messageId: string): string => `agents:delivery:${messageId}`,
  edit: (messageId: string, version: string): string => `agents:edit:${messageId}:${version}`,
  deletion: (messageId: string): string => `agents:delete:${messageId}`,
};

/** The events that record a session message as it stands; `replyTo` is the user message it answers. */
async function recordingOf(options: FoldlineMirrorOptions, message: SessionMessage, replyTo: string | undefined): Promise<BatchEvent[]> {
  const text = textOf(message);
  if (text.trim() === "") return [];
  const messageId = await messageIdOf(options.sessionId ?? "", message.id);
  if (message.role === "user") {
    const author = (options.author ?? (() => DEFAULT_AUTHOR))(message);
    const sentAt = message.createdAt instanceof Date && !Number.isNaN(message.createdAt.getTime()) ? { sentAt: message.createdAt.toISOString() } : {};
    return [{ kind: "source", idempotencyKey: keys.source(messageId), sensitive: options.sensitive?.(message) ?? false, body: { messageId, author: { ...author }, text, ...sentAt } }];
  }
  if (message.role !== "assistant") return [];
  const reply = replyTo === undefined ? {} : { replyToMessageId: replyTo };
  return [
    { kind: "proposal", idempotencyKey: keys.proposal(messageId), body: { proposalId: messageId, agentId: options.agent, ...reply, text } },
    { kind: "delivery", idempotencyKey: keys.delivery(messageId), body: { status: "delivered", proposalId: messageId } },
  ];
}

/** Appends in batches of the API's size (100 events). */
async function appendAll(options: FoldlineMirrorOptions, events: readonly BatchEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += 100) await options.client.appendBatch(options.conversation, events.slice(i, i + 100));
}

const unsupported = (message: string): FoldlineError => new FoldlineError({ code: "unsupported", message });

/** User messages whose text a mirror remembers recording, so an update that left the text alone records nothing. */
const REMEMBERED_TEXTS = 1_024;

/**
 * Mirrors one session's writes into the conversation's log, from now on: `mirrorToFoldline(this.sessions,
 * { client, conversation, agent })` where the object installs its Sessions (its constructor, so every
 * instance mirrors). Returns the function that stops it. The write it mirrors waits for the log.
 */
export function mirrorToFoldline(sessions: Pick<Sessions, "subscribe">, options: FoldlineMirrorOptions): () => void {
  const sessionId = options.sessionId ?? "";
  const report = options.onError ?? ((error: unknown) => console.error("foldline: a session write was not recorded", error));
  const texts = new Map<string, string>();
  const remember = (messageId: string, text: string): void => {
    texts.delete(messageId);
    texts.set(messageId, text);
    for (const key of texts.keys()) {
      if (texts.size <= REMEMBERED_TEXTS) break;
      texts.delete(key);
    }
  };
  /** The user message the next assistant message answers (the newest one this mirror recorded). */
  let answering: string | undefined;
  const mirror = async (event: SessionChangeEvent): Promise<void> => {
    switch (event.type) {
      case "append":
      case "import": {
        if (event.type === "append" && !event.inserted) return;
        const events = await recordingOf(options, event.message, answering);
        const userMessage = event.message.role === "user" && events.length > 0 ? await messageIdOf(sessionId, event.message.id) : undefined;
        // The next answer replies to this message even if recording it fails (`catchUp` records it later).
        if (userMessage !== undefined) answering = userMessage;
        await appendAll(options, events);
        if (userMessage !== undefined) remember(userMessage, textOf(event.message));
        return;
      }
      case "update": {
        const { message } = event;
        if (message.role === "assistant") return await appendAll(options, await recordingOf(options, message, answering));
        const messageId = await messageIdOf(sessionId, message.id);
        const text = textOf(message);
        if (message.role !== "user" || text.trim() === "" || texts.get(messageId) === text) return;
        await recordEdit(options, message, messageId, text);
        remember(messageId, text);
        return;
      }
      case "delete":
        return await recordDeletion(options, event.messageIds);
      case "clear":
        throw unsupported("the session was cleared: Foldline's log is immutable and keeps every message it recorded");
      case "compact":
      case "compaction":
        // The session's own overlay: Foldline compacts the log itself, with its own provenance.
        return;
    }
  };
  const timeoutMs = options.timeoutMs ?? DEFAULT_MIRROR_TIMEOUT_MS;
  return sessions.subscribe(async (event) => {
    if (event.sessionId !== sessionId) return;
    // The session's write waits for this listener: a Foldline that does not answer must not hold it.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new FoldlineError({ code: "network", message: `Foldline did not answer within ${timeoutMs} ms; the session keeps the write (catchUp records it)` })), timeoutMs);
    });
    try {
      await Promise.race([mirror(event), late]);
    } catch (error) {
      report(error, event);
    } finally {
      clearTimeout(timer);
    }
  });
}

/** An `edit` correction of a recorded user message, under a key of its text and `version`. */
async function editEvent(messageId: string, text: string, version: string, editedAt?: string): Promise<BatchEvent> {
  return {
    kind: "correction",
    idempotencyKey: keys.edit(messageId, `${(await sha256Hex(text)).slice(0, 24)}:${version}`),
    body: { action: "edit", targetMessageId: messageId, text, ...(editedAt === undefined ? {} : { editedAt }) },
  };
}

/** A user message's new text: its source when the log has none yet (a message written empty, then filled), else an `edit` correction. */
async function recordEdit(options: FoldlineMirrorOptions, message: SessionMessage, messageId: string, text: string): Promise<void> {
  try {
    const [source] = (await options.client.appendBatch(options.conversation, await recordingOf(options, message, undefined))).results;
    if (source !== undefined && !source.duplicate) return;
  } catch (error) {
    if (!(error instanceof FoldlineError) || error.code !== "idempotency_conflict") throw error;
  }
  // Each update is its own edit (a message edited back to an earlier text is a new edit); the
  // client's retries of this one are replays of it.
  const editedAt = new Date().toISOString();
  await options.client.append(options.conversation, await editEvent(messageId, text, String(Date.parse(editedAt)), editedAt));
}

/**
 * Deleted messages: a `delete` correction each. A person's message leaves what agents are served; an
 * agent's delivered reply is not a message a correction withdraws, and stays (the change feed does not
 * say which a deleted id was).
 */
async function recordDeletion(options: FoldlineMirrorOptions, ids: readonly string[]): Promise<void> {
  const events: BatchEvent[] = [];
  for (const id of ids) {
    const messageId = await messageIdOf(options.sessionId ?? "", id);
    events.push({ kind: "correction", idempotencyKey: keys.deletion(messageId), body: { action: "delete", targetMessageId: messageId } });
  }
  await appendAll(options, events);
}

/** How many of the newest messages `catchUp` looks at by default. */
const CATCH_UP_MESSAGES = 200;

/**
 * Records what the log is missing of the newest `lookBack` messages (default 200) of the session's
 * active path (writes made while the mirror was stopped, or whose mirror failed), oldest first, each
 * as `mirrorToFoldline` would have; what is already recorded is a replay. A user message whose text
 * changed since is recorded as its edit. Its cost follows `lookBack`, never the session's length:
 * the newest messages are read leaf first in the session's bounded windows, then appended at most
 * 100 a call (one at a time for a batch that met a changed message). Returns how many events were
 * new to the log.
 */
export async function catchUp(session: Pick<Session, "history">, options: FoldlineMirrorOptions, lookBack = CATCH_UP_MESSAGES): Promise<number> {
  const newest: SessionMessage[] = [];
  for await (const message of session.history({ newestFirst: true })) {
    if (newest.length >= lookBack) break;
    newest.push(message);
  }
  let answering: string | undefined;
  let added = 0;
  const pending: BatchEvent[] = [];
  const flush = async (): Promise<void> => {
    for (let i = 0; i < pending.length; i += 100) {
      const batch = pending.slice(i, i + 100);
      try {
        const appended = await options.client.appendBatch(options.conversation, batch);
        added += appended.results.filter((result) => !result.duplicate).length;
      } catch (error) {
        if (!(error instanceof FoldlineError) || error.code !== "idempotency_conflict") throw error;
        // One of the batch was recorded with other text (an edited user message): one at a time.
        for (const event of batch) added += await appendOrEdit(options, event);
      }
    }
    pending.length = 0;
  };
  for (const message of newest.reverse()) {
    const events = await recordingOf(options, message, answering);
    pending.push(...events);
    // As the mirror does: an answer replies to the newest user message that says something.
    if (message.role === "user" && events.length > 0) answering = await messageIdOf(options.sessionId ?? "", message.id);
    if (pending.length >= 100) await flush();
  }
  await flush();
  return added;
}

/** One event of a catch-up: appended, or, for a source recorded with other text, its edit. */
async function appendOrEdit(options: FoldlineMirrorOptions, event: BatchEvent): Promise<number> {
  try {
    const appended = await options.client.append(options.conversation, event);
    return appended.duplicate ? 0 : 1;
  } catch (error) {
    if (!(error instanceof FoldlineError) || error.code !== "idempotency_conflict") throw error;
    // An answer recorded by a mirror that had not seen the message it answers carries no reply-to:
    // it is recorded, and its proposal never changes.
    if (event.kind === "proposal") return 0;
    if (event.kind !== "source") throw error;
    const edit = await options.client.append(options.conversation, await editEvent(event.body.messageId, event.body.text, "catch-up"));
    return edit.duplicate ? 0 : 1;
  }
}

/** An AI SDK model message, as `generateText`/`streamText` take them in `messages`. */
export type FoldlineModelMessage = { readonly role: "system"; readonly content: string } | { readonly role: "user" | "assistant"; readonly content: string };

/**
 * The agent's verified context as AI SDK model messages, for `streamText({ model, messages })` in
 * place of the session's transcript: `foldlineMessages({ client, conversation, agent, query })`,
 * `query` being the newest user message (it recalls memory for it). The context's system messages
 * carry Foldline's envelopes (history and memory, marked as untrusted data); the caller's own system
 * prompt goes in `system`.
 */
export async function foldlineMessages(options: { readonly client: FoldlineClient; readonly conversation: string; readonly agent: string; readonly query?: string }): Promise<FoldlineModelMessage[]> {
  const { client, conversation, agent, query } = options;
  const context: ContextResponse = await client.context(conversation, { agent, ...(query === undefined || query.trim() === "" ? {} : { query }) });
  return context.messages.map((message) => ({ role: message.role, content: message.content }));
}
