import type { ReplyJob } from "../core/jobs";
import { currentDeclaration } from "../storage/control/declarations";
import { readEventsByKeys } from "../storage/shard/events";
import { dispatchProposal } from "./reply-dispatch";
import { produceReply } from "./reply-produce";
import type { ReplyOutcome } from "./reply-record";
import { admits, replyKeys } from "./reply-record";
import { shardDatabaseOf } from "../storage/shards";

/**
 * The agent's side, off the request path: produce the reply once (`reply-produce`, written under
 * keys of the source message, `reply-record`), then send it where the agent may speak directly
 * (`reply-dispatch`). A dead-lettered job's failure notice is `reply-notice`.
 */
export async function reply(env: Env, job: ReplyJob, attempts: number): Promise<ReplyOutcome> {
  const declaration = await currentDeclaration(env.DB, job.agentId);
  // `none`: the agent's bot reads context and posts proposals itself; Foldline produces nothing.
  if (declaration === undefined || !declaration.registration.agent.enabled || declaration.registration.agent.reply.mode === "none") return { kind: "done" };
  if (!admits(declaration, job)) return { kind: "done" };
  const k = replyKeys(job);
  const existing = await readEventsByKeys(await shardDatabaseOf(env, job.conversationId), job.conversationId, [k.proposal]);
  let proposal = existing.get(k.proposal);
  if (proposal === undefined) {
    const produced = await produceReply(env, declaration, job, attempts);
    if (produced.kind !== "proposal") return produced.outcome;
    proposal = produced.event;
  }
  if (proposal.kind !== "proposal") return { kind: "done" };
  return dispatchProposal(env, declaration, job, proposal.body.proposalId, proposal.body.text, attempts);
}
