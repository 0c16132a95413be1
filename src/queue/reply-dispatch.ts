import { directReplyAgents } from "../config";
import { opsText } from "../core/ops-text";
import { telegramRoute } from "../core/conversation-id";
import type { ReplyJob } from "../core/jobs";
import { recordIncident } from "../incidents";
import { logger } from "../logger";
import type { StoredDeclaration } from "../storage/control/declarations";
import { readDeliveries, readEventsByKeys } from "../storage/shard/events";
import { deliverText } from "../telegram/dispatch";
import type { ReplyOutcome } from "./reply-record";
import { appendEvents } from "./reply-record";
import { shardDatabaseOf } from "../storage/shards";
import { backoffSeconds } from "./retry";

/**
 * Sending a recorded proposal: only for agents on the direct-reply allowlist, only in Telegram
 * conversations. Every attempt is delivery evidence keyed by the proposal (`dispatch:<proposal>:…`),
 * so a delivered proposal is never sent again and a split reply resumes after the parts it sent.
 */

/** Whether the agent's proposals in this conversation go to a chat at all. */
export function mayDispatch(env: Env, agentId: string, conversationId: string): boolean {
  return telegramRoute(conversationId) !== undefined && directReplyAgents(env).has(agentId);
}

/** Sends a recorded proposal to its Telegram chat, once, if the agent may speak there directly. */
export async function dispatchProposal(env: Env, declaration: StoredDeclaration, job: ReplyJob, proposalId: string, text: string, attempts: number): Promise<ReplyOutcome> {
  const route = telegramRoute(job.conversationId);
  if (route === undefined || !directReplyAgents(env).has(declaration.agentId)) return { kind: "done" };
  const delivered = `dispatch:${proposalId}:delivered`;
  if ((await readEventsByKeys(await shardDatabaseOf(env, job.conversationId), job.conversationId, [delivered])).has(delivered)) return { kind: "done" };

  const replyTo = /^\d+$/.test(job.sourceMessageId) ? Number(job.sourceMessageId) : undefined;
  const sending = Date.now();
  const sent = await deliverText(env, {
    botId: route.botId,
    chatId: route.chatId,
    ...(route.threadId === undefined ? {} : { threadId: route.threadId }),
    ...(replyTo === undefined ? {} : { replyToMessageId: replyTo }),
    text,
    alreadySent: await partsInChat(env, job.conversationId, proposalId),
  });
  const at = new Date().toISOString();
  const parts = sent.ok ? sent.value.messageIds.length : sent.error.sentParts;
  logger[sent.ok ? "info" : "warn"]("reply.dispatch", { conversationId: job.conversationId, agentId: declaration.agentId, outcome: sent.ok ? "delivered" : sent.error.kind, parts, ms: Date.now() - sending });
  if (sent.ok) {
    await appendEvents(env, job.conversationId, [
      { kind: "delivery", idempotencyKey: delivered, sensitive: false, body: { status: "delivered", proposalId, externalMessageId: String(sent.value.messageIds[0] ?? ""), at } },
    ]);
    return { kind: "done" };
  }
  const failure = sent.error;
  const reason = failure.kind === "rate_limited" ? `rate limited for ${failure.retryAfterSeconds}s` : `${failure.kind}: ${"description" in failure ? failure.description : ""}`;
  const sentMessageIds = failure.sentMessageIds.map(String);
  await appendEvents(env, job.conversationId, [
    {
      kind: "delivery",
      idempotencyKey: `dispatch:${proposalId}:failed:${crypto.randomUUID()}`,
      sensitive: false,
      body: { status: "failed", proposalId, reason: reason.slice(0, 1_000), at, ...(sentMessageIds.length === 0 ? {} : { sentMessageIds }) },
    },
  ]);
  if (failure.kind === "rate_limited") return { kind: "retry", delaySeconds: backoffSeconds(env, attempts, Math.max(1, failure.retryAfterSeconds)) };
  if (failure.kind === "unavailable") return { kind: "retry", delaySeconds: backoffSeconds(env, attempts) };
  // Blocked, kicked or refused: recorded, never retried.
  await recordIncident(env, {
    conversationId: job.conversationId,
    agentId: declaration.agentId,
    runId: null,
    kind: "delivery_failure",
    code: failure.kind,
    message: opsText`proposal ${proposalId} not delivered: ${failure.kind}`,
    detail: reason,
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
  for (const event of await readDeliveries(await shardDatabaseOf(env, conversationId), conversationId, proposalId)) {
    if (event.kind !== "delivery" || event.body.status !== "failed") continue;
    const ids = event.body.sentMessageIds ?? [];
    if (ids.length > longest.length) longest = ids;
  }
  // Our own ids are Telegram message ids; anything else was not written by this dispatcher.
  return longest.every((id) => /^\d{1,15}$/.test(id)) ? longest.map(Number) : [];
}
