import type { ReplyJob } from "../core/jobs";
import { currentDeclaration } from "../storage/control/declarations";
import { readEventsByKeys } from "../storage/shard/events";
import { dispatchProposal, mayDispatch } from "./reply-dispatch";
import { admits, appendEvents, replyKeys } from "./reply-record";
import { shardDatabaseOf } from "../storage/shards";

/** What the chat is told when a reply could not be produced. */
export const FAILURE_NOTICE = "Sorry, I could not answer that message just now.";

/**
 * Retries are exhausted (the job is dead-lettered): a short failure notice goes to the chat — for
 * allowlisted agents only, like any direct reply — recorded as a proposal so history shows what
 * the user saw.
 */
export async function abandonReply(env: Env, job: ReplyJob, attempts: number): Promise<void> {
  const declaration = await currentDeclaration(env.DB, job.agentId);
  if (declaration === undefined || !admits(declaration, job) || !mayDispatch(env, job.agentId, job.conversationId)) return;
  const k = replyKeys(job);
  if ((await readEventsByKeys(await shardDatabaseOf(env, job.conversationId), job.conversationId, [k.proposal])).has(k.proposal)) return;
  const noticeId = `${k.proposalId}_notice`;
  const written = await appendEvents(env, job.conversationId, [
    { kind: "proposal", idempotencyKey: k.notice, sensitive: false, body: { proposalId: noticeId, agentId: job.agentId, runId: k.run, replyToMessageId: job.sourceMessageId, text: FAILURE_NOTICE } },
  ]);
  if (written.ok) await dispatchProposal(env, declaration, job, noticeId, FAILURE_NOTICE, attempts);
}
