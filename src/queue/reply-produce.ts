import { DEFAULT_PROFILE, openAiApiKey } from "../config";
import { buildChatRequest } from "../core/compose";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import type { ReplyJob } from "../core/jobs";
import type { NativeMessage } from "../core/render";
import { readTrustedDocuments } from "../storage/r2/documents";
import { contextFor } from "../durable/stub";
import type { BotReply } from "../external/bots";
import { askExternalBot } from "../external/bots";
import { buildBotPayload } from "../external/payload";
import type { ModelFailure, ModelReceipt } from "../model/compactor-model";
import { chatCompletion } from "../model/compactor-model";
import type { StoredDeclaration } from "../storage/control/declarations";
import type { Answer, Produced } from "./reply-record";
import { recordAnswer, recordReplyFailure } from "./reply-record";
import { backoffSeconds } from "./retry";

/**
 * Producing a reply: compose the agent's context as of the message it answers, ask its model (or
 * hand the context to the agent's external bot, src/external/), and record the run and the proposal.
 * A failure is a failed run and an incident; whether it is retried depends on what failed.
 */

const OFFLINE_REPLY = "foldline-offline-reply";

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

/** An external bot's answer: the run names the transport as its model, since no model is known. */
function externalAnswer(answer: BotReply): Answer {
  const name = `external:${answer.via}`;
  return { provider: name, model: name, usage: null, latencyMs: answer.latencyMs, text: answer.text, via: answer.via };
}

export async function produceReply(env: Env, declaration: StoredDeclaration, job: ReplyJob, attempts: number): Promise<Produced> {
  const { agent } = declaration.registration;
  const failed = async (code: string, message: string, retryable: boolean): Promise<Produced> => {
    await recordReplyFailure(env, job, attempts, code, message);
    return { kind: "stop", outcome: retryable ? { kind: "retry", delaySeconds: backoffSeconds(env, attempts) } : { kind: "done" } };
  };

  // As of the message this job answers: a burst gets one reply per message, each ending there.
  const selection = await contextFor(env, job.conversationId, agent.id, job.sourceSeq);
  if (!selection.ok) {
    // A message deleted (or no longer admitted) before its reply was composed is not answered.
    if (selection.error.details?.["reason"] === "source_absent") return { kind: "stop", outcome: { kind: "done" } };
    return failed(`context_${selection.error.code}`, selection.error.message, selection.error.code !== "not_found");
  }
  const documents = await readTrustedDocuments(env.DOCUMENTS, agent);
  if (!documents.ok) return failed(`documents_${documents.error.code}`, documents.error.message, false);
  const request = buildChatRequest(agent.provider.model, documents.value.documents, selection.value.messages);

  const external = agent.reply.mode === "service" || agent.reply.mode === "http" ? agent.reply : undefined;
  if (external !== undefined) {
    const payload = buildBotPayload({
      conversationId: job.conversationId,
      agentId: agent.id,
      sourceSeq: job.sourceSeq,
      sourceMessageId: job.sourceMessageId,
      request,
      manifest: selection.value.manifest,
      documents: documents.value.documents,
    });
    const answered = await askExternalBot(env, external, payload);
    // Like a model: a bot that is down or slow gets another attempt; one that refused, or answered
    // something that is not a reply, would do the same again.
    if (!answered.ok) return failed(`bot_${answered.error.kind}`, answered.error.message, answered.error.kind === "unreachable" || answered.error.kind === "timeout");
    return recordAnswer(env, job, attempts, agent.id, externalAnswer(answered.value), selection.value.manifest.totals.chars);
  }

  const messages: NativeMessage[] = request.messages.map((m) => ({ role: m.role, content: typeof m.content === "string" ? m.content : "" }));
  const offline = agent.provider.profile === DEFAULT_PROFILE && openAiApiKey(env) === undefined;
  const answered: Result<ModelReceipt, ModelFailure> = offline ? ok(offlineReply(messages)) : await chatCompletion(env, agent.provider.profile, { model: agent.provider.model, messages });
  if (!answered.ok) return failed(`model_${answered.error.kind}`, answered.error.message, answered.error.kind !== "rejected");
  if (answered.value.text.trim() === "") return failed("empty_reply", "the model returned no text", true);
  return recordAnswer(env, job, attempts, agent.id, answered.value, selection.value.manifest.totals.chars);
}
