import { compactionRetryBaseSeconds, directReplyAgents, DEFAULT_PROFILE, openAiApiKey } from "../config";
import { buildChatRequest } from "../core/compose";
import { scopesAllow, telegramRoute } from "../core/conversation-id";
import type { EventInput, StoredEvent } from "../core/events";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import type { NativeMessage } from "../core/render";
import { appendToConversation, contextFor } from "../durable/stub";
import type { BotReply } from "../external/bots";
import { askExternalBot } from "../external/bots";
import { buildBotPayload } from "../external/payload";
import { readTrustedDocuments } from "../http/compose";
import type { ModelFailure, ModelReceipt } from "../model/compactor-model";
import { chatCompletion } from "../model/compactor-model";
import { recordIncident } from "../incidents";
import { currentDeclaration } from "../storage/compaction-store";
import type { StoredDeclaration } from "../storage/compaction-store";
import { readDeliveries, readEventsByKeys } from "../storage/event-store";
import { deliverText } from "../telegram/dispatch";
import type { ReplyJob } from "./jobs";
import { retryDelaySeconds } from "./retry";

/**
 * The agent's side, off the request path: compose the agent's context, ask its model (or hand it
 * to the agent's external bot, src/external/), record the run and the proposal, and — only for
 * agents on the direct-reply allowlist, only in Telegram conversations — send it and record every
 * attempt as delivery evidence.
 *
 * Every write is keyed by the source message (`reply:<agent>:<seq>:…`, `dispatch:<proposal>:…`), so
 * a redelivered job finds what an earlier attempt wrote: a proposal is asked for once, and a
 * delivered proposal is never sent again.
 */

export type ReplyOutcome = { kind: "done" } | { kind: "retry"; delaySeconds: number };

const OFFLINE_REPLY = "foldline-offline-reply";
export const FAILURE_NOTICE = "Sorry, I could not answer that message just now.";

const keys = (job: ReplyJob) => {
  const base = `reply:${job.agentId}:${job.sourceSeq}`;
  return { run: `${base}:run`, proposal: `${base}:proposal`, failed: `${base}:failed`, notice: `${base}:notice`, proposalId: `rp_${job.agentId}_${job.sourceSeq}` };
};

/** The offline reply when no model is configured: honest about what it is, never a pretend model. */
function offlineReply(messages: readonly NativeMessage[]): ModelReceipt {
  const last = [...messages].reverse().find((m) => m.role === "user")?.content ?? "";
  const quoted = last.length > 200 ? `${last.slice(0, 200)}…` : last;
  return {
    provider: OFFLINE_REPLY,
    model: OFFLINE_REPLY,
    responseId: null,
    finishReason: null,
    usage: null,
    latencyMs: 0,
    text: `Noted: ${quoted}\n(Offline reply agent: set OPENAI_API_KEY to answer with a model.)`,
  };
}

async function append(env: Env, conversationId: string, events: EventInput[]): Promise<Result<StoredEvent[]>> {
  const appended = await appendToConversation(env, { conversationId, events });
  return appended.ok ? ok(appended.value.results.map((r) => r.event)) : appended;
}

/**
 * An agent writes only where its current sources admit it: a job queued before its sources
 * changed, or one that names another conversation, composes, asks, records and sends nothing.
 */
function admits(declaration: StoredDeclaration, job: ReplyJob): boolean {
  return scopesAllow(declaration.registration.agent.sources, job.conversationId);
}

export async function reply(env: Env, job: ReplyJob, attempts: number): Promise<ReplyOutcome> {
  const declaration = await currentDeclaration(env.DB, job.agentId);
  // `none`: the agent's bot reads context and posts proposals itself; Foldline produces nothing.
  if (declaration === undefined || !declaration.registration.agent.enabled || declaration.registration.agent.reply.mode === "none") return { kind: "done" };
  if (!admits(declaration, job)) return { kind: "done" };
  const k = keys(job);
  const existing = await readEventsByKeys(env.DB, job.conversationId, [k.proposal]);
  let proposal = existing.get(k.proposal);
  if (proposal === undefined) {
    const produced = await produce(env, declaration, job, attempts);
    if (produced.kind !== "proposal") return produced.outcome;
    proposal = produced.event;
  }
  if (proposal.kind !== "proposal") return { kind: "done" };
  return dispatch(env, declaration, job, proposal.body.proposalId, proposal.body.text);
}

/** A failed reply attempt: a failed agent run and an incident, keyed by attempt so a redelivery adds its own. */
export async function recordReplyFailure(env: Env, job: ReplyJob, attempts: number, code: string, message: string): Promise<void> {
  const k = keys(job);
  await append(env, job.conversationId, [
    {
      kind: "run",
      idempotencyKey: `${k.failed}:${attempts}`,
      sensitive: false,
      body: { runId: k.run, agentId: job.agentId, role: "agent", status: "failed", error: { code, message: message.slice(0, 1_000) }, detail: { attempt: attempts, sourceSeq: job.sourceSeq } },
    },
  ]);
  await recordIncident(env, {
    conversationId: job.conversationId,
    agentId: job.agentId,
    runId: k.run,
    kind: "agent_failure",
    code: code.slice(0, 64),
    message: `attempt ${attempts}: ${message.slice(0, 900)}`,
    createdAt: new Date().toISOString(),
  });
}

type Produced = { kind: "proposal"; event: StoredEvent } | { kind: "stop"; outcome: ReplyOutcome };

async function produce(env: Env, declaration: StoredDeclaration, job: ReplyJob, attempts: number): Promise<Produced> {
  const { agent } = declaration.registration;
  const failed = async (code: string, message: string, retryable: boolean): Promise<Produced> => {
    await recordReplyFailure(env, job, attempts, code, message);
    return { kind: "stop", outcome: retryable ? { kind: "retry", delaySeconds: retryDelaySeconds(compactionRetryBaseSeconds(env), attempts, null) } : { kind: "done" } };
  };

  // As of the message this job answers: a burst gets one reply per message, each ending there.
  const selection = await contextFor(env, job.conversationId, agent.id, job.sourceSeq);
  if (!selection.ok) {
    // A message deleted (or no longer admitted) before its reply was composed is not answered.
    if (selection.error.details?.["reason"] === "source_absent") return { kind: "stop", outcome: { kind: "done" } };
    return failed(`context_${selection.error.code}`, selection.error.message, selection.error.code !== "not_found");
  }
  const documents = await readTrustedDocuments(env, agent);
  if (!documents.ok) return failed(`documents_${documents.error.code}`, documents.error.message, false);
  const request = buildChatRequest(agent.provider.model, documents.value, selection.value.messages);

  const external = agent.reply.mode === "service" || agent.reply.mode === "http" ? agent.reply : undefined;
  if (external !== undefined) {
    const payload = buildBotPayload({
      conversationId: job.conversationId,
      agentId: agent.id,
      sourceSeq: job.sourceSeq,
      sourceMessageId: job.sourceMessageId,
      request,
      manifest: selection.value.manifest,
      documents: documents.value,
    });
    const answered = await askExternalBot(env, external, payload);
    // Like a model: a bot that is down or slow gets another attempt; one that refused, or answered
    // something that is not a reply, would do the same again.
    if (!answered.ok) return failed(`bot_${answered.error.kind}`, answered.error.message, answered.error.kind === "unreachable" || answered.error.kind === "timeout");
    return record(env, job, agent.id, externalAnswer(answered.value), selection.value.manifest.totals.chars);
  }

  const messages: NativeMessage[] = request.messages.map((m) => ({ role: m.role, content: typeof m.content === "string" ? m.content : "" }));
  const offline = agent.provider.profile === DEFAULT_PROFILE && openAiApiKey(env) === undefined;
  const answered: Result<ModelReceipt, ModelFailure> = offline ? ok(offlineReply(messages)) : await chatCompletion(env, agent.provider.profile, { model: agent.provider.model, messages });
  if (!answered.ok) return failed(`model_${answered.error.kind}`, answered.error.message, answered.error.kind !== "rejected");
  if (answered.value.text.trim() === "") return failed("empty_reply", "the model returned no text", true);
  return record(env, job, agent.id, answered.value, selection.value.manifest.totals.chars);
}

/** What a completed reply run records, whether a model or an external bot answered. */
interface Answer {
  readonly provider: string;
  readonly model: string;
  readonly usage: ModelReceipt["usage"];
  readonly latencyMs: number;
  readonly text: string;
  readonly via?: BotReply["via"];
}

/** An external bot's answer: the run names the transport as its model, since no model is known. */
function externalAnswer(answer: BotReply): Answer {
  const name = `external:${answer.via}`;
  return { provider: name, model: name, usage: null, latencyMs: answer.latencyMs, text: answer.text, via: answer.via };
}

/** The completed run and the proposal, in one batch: a reply is never recorded without its run. */
async function record(env: Env, job: ReplyJob, agentId: string, receipt: Answer, contextChars: number): Promise<Produced> {
  const k = keys(job);
  const text = receipt.text.trim();
  const written = await append(env, job.conversationId, [
    {
      kind: "run",
      idempotencyKey: k.run,
      sensitive: false,
      body: {
        runId: k.run,
        agentId,
        role: "agent",
        status: "completed",
        model: receipt.model,
        ...(receipt.usage === null ? {} : { usage: receipt.usage }),
        detail: { sourceSeq: job.sourceSeq, provider: receipt.provider, latencyMs: receipt.latencyMs, contextChars, ...(receipt.via === undefined ? {} : { via: receipt.via }) },
      },
    },
    { kind: "proposal", idempotencyKey: k.proposal, sensitive: false, body: { proposalId: k.proposalId, agentId, runId: k.run, replyToMessageId: job.sourceMessageId, text } },
  ]);
  if (written.ok) {
    const event = written.value[1];
    return event === undefined ? { kind: "stop", outcome: { kind: "done" } } : { kind: "proposal", event };
  }
  // A concurrent attempt recorded its own reply first: that one stands, this answer is dropped.
  const winner = (await readEventsByKeys(env.DB, job.conversationId, [k.proposal])).get(k.proposal);
  return winner === undefined ? { kind: "stop", outcome: { kind: "retry", delaySeconds: 5 } } : { kind: "proposal", event: winner };
}

/** Sends a recorded proposal to its Telegram chat, once, if the agent may speak there directly. */
async function dispatch(env: Env, declaration: StoredDeclaration, job: ReplyJob, proposalId: string, text: string): Promise<ReplyOutcome> {
  const route = telegramRoute(job.conversationId);
  if (route === undefined || !directReplyAgents(env).has(declaration.agentId)) return { kind: "done" };
  const delivered = `dispatch:${proposalId}:delivered`;
  if ((await readEventsByKeys(env.DB, job.conversationId, [delivered])).has(delivered)) return { kind: "done" };

  const replyTo = /^\d+$/.test(job.sourceMessageId) ? Number(job.sourceMessageId) : undefined;
  const sent = await deliverText(env, {
    botId: route.botId,
    chatId: route.chatId,
    ...(route.threadId === undefined ? {} : { threadId: route.threadId }),
    ...(replyTo === undefined ? {} : { replyToMessageId: replyTo }),
    text,
    alreadySent: await partsInChat(env, job.conversationId, proposalId),
  });
  const at = new Date().toISOString();
  if (sent.ok) {
    await append(env, job.conversationId, [
      { kind: "delivery", idempotencyKey: delivered, sensitive: false, body: { status: "delivered", proposalId, externalMessageId: String(sent.value.messageIds[0] ?? ""), at } },
    ]);
    return { kind: "done" };
  }
  const failure = sent.error;
  const reason = failure.kind === "rate_limited" ? `rate limited for ${failure.retryAfterSeconds}s` : `${failure.kind}: ${"description" in failure ? failure.description : ""}`;
  const sentMessageIds = failure.sentMessageIds.map(String);
  await append(env, job.conversationId, [
    {
      kind: "delivery",
      idempotencyKey: `dispatch:${proposalId}:failed:${crypto.randomUUID()}`,
      sensitive: false,
      body: { status: "failed", proposalId, reason: reason.slice(0, 1_000), at, ...(sentMessageIds.length === 0 ? {} : { sentMessageIds }) },
    },
  ]);
  if (failure.kind === "rate_limited") return { kind: "retry", delaySeconds: Math.max(1, failure.retryAfterSeconds) };
  if (failure.kind === "unavailable") return { kind: "retry", delaySeconds: 5 };
  // Blocked, kicked or refused: recorded, never retried.
  await recordIncident(env, {
    conversationId: job.conversationId,
    agentId: declaration.agentId,
    runId: null,
    kind: "delivery_failure",
    code: failure.kind,
    message: reason.slice(0, 1_000),
    createdAt: at,
  });
  return { kind: "done" };
}

/**
 * The parts of a split reply an earlier attempt got into the chat: the longest progress any failed
 * delivery of the proposal recorded (each attempt resumes after the previous one, so later
 * failures carry everything sent before them).
 */
async function partsInChat(env: Env, conversationId: string, proposalId: string): Promise<number[]> {
  let longest: string[] = [];
  for (const event of await readDeliveries(env.DB, conversationId, proposalId)) {
    if (event.kind !== "delivery" || event.body.status !== "failed") continue;
    const ids = event.body.sentMessageIds ?? [];
    if (ids.length > longest.length) longest = ids;
  }
  // Our own ids are Telegram message ids; anything else was not written by this dispatcher.
  return longest.every((id) => /^\d{1,15}$/.test(id)) ? longest.map(Number) : [];
}

/**
 * Retries are exhausted: a short failure notice goes to the chat — for allowlisted agents only,
 * like any direct reply — recorded as a proposal so history shows what the user saw.
 */
export async function abandonReply(env: Env, job: ReplyJob): Promise<void> {
  const declaration = await currentDeclaration(env.DB, job.agentId);
  if (declaration === undefined || !admits(declaration, job) || telegramRoute(job.conversationId) === undefined || !directReplyAgents(env).has(job.agentId)) return;
  const k = keys(job);
  if ((await readEventsByKeys(env.DB, job.conversationId, [k.proposal])).has(k.proposal)) return;
  const noticeId = `${k.proposalId}_notice`;
  const written = await append(env, job.conversationId, [
    { kind: "proposal", idempotencyKey: k.notice, sensitive: false, body: { proposalId: noticeId, agentId: job.agentId, runId: k.run, replyToMessageId: job.sourceMessageId, text: FAILURE_NOTICE } },
  ]);
  if (written.ok) await dispatch(env, declaration, job, noticeId, FAILURE_NOTICE);
}
