/**
 * `foldline/openai-agents`: a Foldline conversation as the OpenAI Agents SDK's `Session`
 * (docs/CLIENT.md, "The OpenAI Agents SDK"): `run(agent, input, { session: new FoldlineSession({
 * client, conversation, agent: "helper", author }) })`.
 *
 * - `getItems` is the agent's verified context (boundary, amendments, exact tail), not a list of
 *   every item ever stored: the run's history is bounded and proven, whatever the conversation's length.
 * - `addItems` records what was said: a user message as the person's source message, an assistant
 *   message as the agent's proposal, delivered (the run's output is what its caller shows). Tool
 *   calls, their results and reasoning are the run's own working and are not recorded.
 * - The log is immutable: `popItem` withdraws the newest message only when a person wrote it (a
 *   `delete` correction: gone from what agents are served, kept in the log); an agent's delivered
 *   reply cannot be withdrawn, and `clearSession` is refused (start another conversation instead).
 *
 * The Agents SDK is the bot's (an optional peer dependency): this module imports its types only.
 * .dependency-cruiser.cjs holds it to that.
 */
import type { AgentInputItem, Session } from "@openai/agents";
import { FoldlineError } from "./errors.js";
import type { FoldlineClient } from "./index.js";
import type { BatchEvent, ContextResponse } from "./types.js";

export interface FoldlineSessionOptions {
  /** `createClient(…)`; its token needs the conversation and the agent. */
  readonly client: FoldlineClient;
  /** The conversation: the session's id. */
  readonly conversation: string;
  /** The agent whose context is the history, and whose proposals the run's answers are recorded as. */
  readonly agent: string;
  /** Who the session's user messages are from. */
  readonly author: { readonly id: string; readonly name?: string; readonly username?: string };
  /** What memory is recalled with when the history is read (default: none: `getItems` has no message to recall for). */
  readonly query?: string;
}

/** The keys this module writes under (Foldline's own writers hold `tg:`, `reply:`, `dispatch:` and `run:`). */
const keys = {
  source: (messageId: string): string => `openai-agents:source:${messageId}`,
  proposal: (proposalId: string): string => `openai-agents:proposal:${proposalId}`,
  delivery: (proposalId: string): string => `openai-agents:delivery:${proposalId}`,
  withdrawal: (messageId: string): string => `openai-agents:withdrawal:${messageId}`,
};

type Item = AgentInputItem;

/** Foldline's provider-ready messages as Agents SDK input items. */
function items(context: ContextResponse): Item[] {
  return context.messages.map((message): Item => {
    if (message.role === "assistant") return { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: message.content }] };
    return { type: "message", role: message.role, content: message.content };
  });
}

/** The text a user or assistant message item says; undefined for any other item (a tool call, its result, reasoning). */
function spoken(item: Item): { role: "user" | "assistant"; text: string } | undefined {
  if (!("role" in item) || (item.role !== "user" && item.role !== "assistant")) return undefined;
  const content = item.content;
  const text =
    typeof content === "string"
      ? content
      : content.flatMap((part) => ("text" in part && typeof part.text === "string" && (part.type === "input_text" || part.type === "output_text") ? [part.text] : [])).join("\n");
  return text.trim() === "" ? undefined : { role: item.role, text };
}

/** A Foldline conversation as an Agents SDK session. */
export class FoldlineSession implements Session {
  /** The newest person's message this session recorded: the next answer replies to it. */
  #answering: string | undefined;

  constructor(private readonly options: FoldlineSessionOptions) {}

  async getSessionId(): Promise<string> {
    return this.options.conversation;
  }

  async getItems(limit?: number): Promise<Item[]> {
    const { client, conversation, agent, query } = this.options;
    const history = items(await client.context(conversation, { agent, ...(query === undefined ? {} : { query }) }));
    return limit === undefined ? history : history.slice(Math.max(0, history.length - limit));
  }

  async addItems(added: Item[]): Promise<void> {
    const { client, conversation, agent, author } = this.options;
    const events: BatchEvent[] = [];
    for (const item of added) {
      const said = spoken(item);
      if (said === undefined) continue;
      // An id of this module's own: an item's `id` is the provider's, and need not be unique (a
      // chat-completions answer's is its response's, or a placeholder). Made once per call, so the
      // client's retries of this batch are replays.
      const id = crypto.randomUUID();
      if (said.role === "user") {
        const messageId = `oa-${id}`;
        events.push({ kind: "source", idempotencyKey: keys.source(messageId), body: { messageId, author: { ...author }, text: said.text } });
        this.#answering = messageId;
        continue;
      }
      const proposalId = `oa-${id}`;
      const replyTo = this.#answering === undefined ? {} : { replyToMessageId: this.#answering };
      events.push(
        { kind: "proposal", idempotencyKey: keys.proposal(proposalId), body: { proposalId, agentId: agent, ...replyTo, text: said.text } },
        { kind: "delivery", idempotencyKey: keys.delivery(proposalId), body: { status: "delivered", proposalId, at: new Date().toISOString() } },
      );
    }
    for (let i = 0; i < events.length; i += 100) await client.appendBatch(conversation, events.slice(i, i + 100));
  }

  /**
   * Withdraws the newest message of the history when a person wrote it: a `delete` correction, so
   * no agent is served it again (the log keeps it, and says it was withdrawn). Undefined when the
   * history is empty. An agent's delivered reply cannot be withdrawn: `unsupported`.
   */
  async popItem(): Promise<Item | undefined> {
    const { client, conversation, agent } = this.options;
    const context = await client.context(conversation, { agent });
    const last = context.manifest.tail.lastTurnId;
    const item = items(context).at(-1);
    if (last === null || item === undefined) return undefined;
    if (!last.startsWith("s")) throw new FoldlineError({ code: "unsupported", message: "the newest message is the agent's delivered reply: Foldline's log is immutable, and a reply that reached the chat cannot be withdrawn" });
    const seq = Number(last.slice(1));
    const page = await client.request("get", "/v1/conversations/{conversation}/events", { path: { conversation }, query: { after: seq - 1, limit: 1 } });
    const source = page.events[0];
    if (source?.kind !== "source") throw new FoldlineError({ code: "unexpected_response", message: `turn ${last} is not a source event of the log` });
    const messageId = source.body.messageId;
    await client.append(conversation, { kind: "correction", idempotencyKey: keys.withdrawal(messageId), body: { action: "delete", targetMessageId: messageId, deletedAt: new Date().toISOString() } });
    return item;
  }

  /** Refused: Foldline's log is immutable, and a conversation is never emptied. Start a session on another conversation id instead. */
  async clearSession(): Promise<void> {
    throw new FoldlineError({ code: "unsupported", message: "Foldline's log is immutable: a conversation is never cleared; start a session on another conversation id" });
  }
}
