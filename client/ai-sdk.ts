/**
 * `foldline/ai-sdk`: Foldline's memory for any AI SDK model, as language-model middleware
 * (docs/CLIENT.md, "The AI SDK"):
 * `wrapLanguageModel({ model, middleware: foldline({ client, conversation, agent, user }) })`.
 *
 * - **The history is Foldline's.** Each call's prompt keeps its own system messages, then takes
 *   the agent's verified context (the boundary, any amendment, the memory recalled for the last user
 *   message, the exact tail), then the call's last user message and whatever follows it (the step's
 *   tool calls and tool results, untouched). The call's earlier user and assistant messages are
 *   dropped: Foldline holds the conversation, and serves it within the agent's bounds.
 * - **What is said is recorded.** With `user`, the call's last user message is appended as that
 *   user's source message first (its `messageId` makes a resend a replay), so it is the tail's last
 *   turn and is not sent twice (unless it carries files, which the log does not hold: then the call's
 *   message is sent too). The model's text answer is appended as the agent's proposal, replying
 *   to that message; its id is on the result (`providerMetadata.foldline.proposalId`). A proposal
 *   joins the agent's history once it is delivered: `recordDelivery` when the caller has shown or
 *   sent it, or `delivery: "with-answer"` when the answer reaches its reader as it is produced.
 *
 * `generateText` and `streamText` alike. The AI SDK is the bot's (an optional peer dependency):
 * this module imports its types only. .dependency-cruiser.cjs holds it to that.
 */
import type { LanguageModelMiddleware } from "ai";
import { FoldlineError } from "./errors.js";
import type { FoldlineClient } from "./index.js";
import type { AppendedEvent, BatchEvent, ContextResponse } from "./types.js";

type Middleware = LanguageModelMiddleware;
type CallOptions = Parameters<NonNullable<Middleware["transformParams"]>>[0]["params"];
type PromptMessage = CallOptions["prompt"][number];
type GenerateResult = Awaited<ReturnType<NonNullable<Middleware["wrapGenerate"]>>>;
type StreamResult = Awaited<ReturnType<NonNullable<Middleware["wrapStream"]>>>;
type StreamPart = StreamResult["stream"] extends ReadableStream<infer Part> ? Part : never;
type ProviderMetadata = NonNullable<GenerateResult["providerMetadata"]>;

export interface FoldlineUser {
  /** The user's message id in the conversation: it names the source event, so a resent call records it once. */
  readonly messageId: string;
  readonly author: { readonly id: string; readonly name?: string; readonly username?: string };
  /** Whether the message is sensitive (default false): an agent that does not admit sensitive history never sees it. */
  readonly sensitive?: boolean;
}

export interface FoldlineModelOptions {
  /** `createClient(…)`; its token needs the conversation and the agent. */
  readonly client: FoldlineClient;
  readonly conversation: string;
  /** The agent whose context the model is given, and whose proposals its answers are recorded as. */
  readonly agent: string;
  /** Who sent the call's last user message: it is recorded as their source message before the context is read. */
  readonly user?: FoldlineUser;
  /** The message an answer replies to when there is no `user`; default: none. */
  readonly replyTo?: string;
  /** What memory is recalled with; default: the text of the call's last user message. */
  readonly query?: string;
  /**
   * `"reported"` (the default): the caller records the delivery once the answer reached its reader
   * (`recordDelivery`). `"with-answer"`: the proposal is recorded as delivered with the answer, for
   * an answer its reader sees as it is produced (a chat window streaming it).
   */
  readonly delivery?: "reported" | "with-answer";
  /**
   * Called when an answer could not be recorded (Foldline unreachable, a refused event): the answer
   * is still returned. Default: `console.error`. A failure to read the context is thrown instead: the
   * model is never called without the agent's verified history.
   */
  readonly onRecordError?: (error: unknown) => void;
}

/** What a recorded answer carries in `providerMetadata.foldline`. */
export interface FoldlineAnswer {
  readonly conversation: string;
  readonly proposalId: string;
  readonly seq: number;
}

/** The keys this module writes under (Foldline's own writers hold `tg:`, `reply:`, `dispatch:` and `run:`). */
const keys = {
  source: (messageId: string): string => `ai-sdk:source:${messageId}`,
  proposal: (proposalId: string): string => `ai-sdk:proposal:${proposalId}`,
  delivery: (proposalId: string): string => `ai-sdk:delivery:${proposalId}`,
};

const textOf = (message: PromptMessage): string =>
  message.role === "system" ? message.content : message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");

/** Foldline's provider-ready messages in the AI SDK's prompt form. */
function promptMessages(context: ContextResponse): PromptMessage[] {
  return context.messages.map((message): PromptMessage => {
    if (message.role === "system") return { role: "system", content: message.content };
    return { role: message.role, content: [{ type: "text", text: message.content }] };
  });
}

/**
 * The call's prompt with Foldline's history in place of its own: its system messages, the agent's
 * context, then its last user message (unless it was just recorded into that context) and what
 * follows it. A prompt without a user message keeps all of it after the context.
 */
function withFoldlineHistory(prompt: readonly PromptMessage[], context: ContextResponse, lastUserRecorded: boolean): PromptMessage[] {
  const last = prompt.findLastIndex((message) => message.role === "user");
  const system = prompt.filter((message, i) => message.role === "system" && (last === -1 || i < last));
  const current = last === -1 ? prompt.filter((message) => message.role !== "system") : prompt.slice(lastUserRecorded ? last + 1 : last);
  return [...system, ...promptMessages(context), ...current];
}

interface Recording {
  readonly options: FoldlineModelOptions;
  /** The message the answer replies to, once its source is recorded. */
  readonly replyTo: string | undefined;
}

const recordings = new WeakMap<CallOptions, Recording>();

function report(options: FoldlineModelOptions, error: unknown): void {
  (options.onRecordError ?? ((e: unknown) => console.error("foldline: an answer was not recorded", e)))(error);
}

/** Appends the answer as the agent's proposal (and its delivery, with `delivery: "with-answer"`); undefined when it could not be. */
async function recordAnswer(recording: Recording, text: string): Promise<FoldlineAnswer | undefined> {
  const { options, replyTo } = recording;
  if (text.trim() === "") return undefined;
  const proposalId = `ai-${crypto.randomUUID()}`;
  const events: BatchEvent[] = [{ kind: "proposal", idempotencyKey: keys.proposal(proposalId), body: { proposalId, agentId: options.agent, ...(replyTo === undefined ? {} : { replyToMessageId: replyTo }), text } }];
  if (options.delivery === "with-answer") events.push({ kind: "delivery", idempotencyKey: keys.delivery(proposalId), body: { status: "delivered", proposalId, at: new Date().toISOString() } });
  try {
    const appended = await options.client.appendBatch(options.conversation, events);
    const seq = appended.results[0]?.event.seq;
    if (seq === undefined) throw new FoldlineError({ code: "unexpected_response", message: "the proposal's append answered no event" });
    return { conversation: options.conversation, proposalId, seq };
  } catch (error) {
    report(options, error);
    return undefined;
  }
}

const withAnswer = (metadata: ProviderMetadata | undefined, answer: FoldlineAnswer | undefined): ProviderMetadata | undefined =>
  answer === undefined ? metadata : { ...metadata, foldline: { conversation: answer.conversation, proposalId: answer.proposalId, seq: answer.seq } };

/** The middleware: `wrapLanguageModel({ model, middleware: foldline(options) })`. */
export function foldline(options: FoldlineModelOptions): Middleware {
  // The text recorded as the user's message: each step of a tool loop sends the same one, recorded once.
  let recorded: string | undefined;
  return {
    specificationVersion: "v4",
    async transformParams({ params }) {
      const lastUser = params.prompt.findLast((message) => message.role === "user");
      const said = lastUser === undefined ? undefined : textOf(lastUser);
      const { user } = options;
      const recordUser = user !== undefined && said !== undefined && said.trim() !== "";
      if (recordUser && recorded !== said) {
        await options.client.append(options.conversation, {
          kind: "source",
          idempotencyKey: keys.source(user.messageId),
          sensitive: user.sensitive ?? false,
          body: { messageId: user.messageId, author: { ...user.author }, text: said },
        });
        recorded = said;
      }
      const query = options.query ?? said;
      const context = await options.client.context(options.conversation, { agent: options.agent, ...(query === undefined || query.trim() === "" ? {} : { query }) });
      // The history holds the message's text only: one that also carries files (an image) is sent as the call gave it.
      const inHistory = recordUser && lastUser?.role === "user" && lastUser.content.every((part) => part.type === "text");
      const transformed: CallOptions = { ...params, prompt: withFoldlineHistory(params.prompt, context, inHistory) };
      recordings.set(transformed, { options, replyTo: recordUser ? user.messageId : options.replyTo });
      return transformed;
    },
    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const recording = recordings.get(params);
      if (recording === undefined) return result;
      const text = result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("");
      const answer = await recordAnswer(recording, text);
      const providerMetadata = withAnswer(result.providerMetadata, answer);
      return providerMetadata === undefined ? result : { ...result, providerMetadata };
    },
    async wrapStream({ doStream, params }) {
      const result = await doStream();
      const recording = recordings.get(params);
      if (recording === undefined) return result;
      let text = "";
      const stream = result.stream.pipeThrough(
        new TransformStream<StreamPart, StreamPart>({
          async transform(part, controller) {
            if (part.type === "text-delta") text += part.delta;
            if (part.type !== "finish") return controller.enqueue(part);
            // The answer is whole: recorded before the stream says so, its id on the finish part.
            const providerMetadata = withAnswer(part.providerMetadata, await recordAnswer(recording, text));
            controller.enqueue(providerMetadata === undefined ? part : { ...part, providerMetadata });
          },
        }),
      );
      return { ...result, stream };
    },
  };
}

/**
 * Records that an answer reached its reader (or failed to): its proposal then joins the agent's
 * history. `answer` is `providerMetadata.foldline` of the call's result.
 */
export async function recordDelivery(
  client: FoldlineClient,
  answer: FoldlineAnswer,
  outcome: { readonly status: "delivered"; readonly externalMessageId?: string } | { readonly status: "failed"; readonly reason: string } = { status: "delivered" },
): Promise<AppendedEvent> {
  const at = new Date().toISOString();
  const body = outcome.status === "delivered" ? { status: "delivered" as const, proposalId: answer.proposalId, at, ...(outcome.externalMessageId === undefined ? {} : { externalMessageId: outcome.externalMessageId }) } : { status: "failed" as const, proposalId: answer.proposalId, reason: outcome.reason, at };
  return client.append(answer.conversation, { kind: "delivery", idempotencyKey: keys.delivery(answer.proposalId), body });
}
