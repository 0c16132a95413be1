import type { StoredEvent } from "../core/events";
import type { ReplyJob } from "../core/jobs";
import type { StoredDeclaration } from "../storage/control/declarations";

/**
 * The agent hand-off: one reply job per admitted new source message, per agent whose replies
 * Foldline produces — by its built-in model call or by handing the context to the agent's external
 * bot (`service`, `http`). Agents with `none` get no job: their bot reads context and posts itself.
 */
export function replyJobs(conversationId: string, serving: readonly StoredDeclaration[], appended: readonly StoredEvent[]): ReplyJob[] {
  const jobs: ReplyJob[] = [];
  for (const declaration of serving) {
    const { agent } = declaration.registration;
    if (agent.reply.mode === "none") continue;
    for (const event of appended) {
      if (event.kind !== "source" || (event.sensitive && !agent.admitSensitive)) continue;
      jobs.push({ type: "reply", conversationId, agentId: agent.id, sourceSeq: event.seq, sourceMessageId: event.body.messageId });
    }
  }
  return jobs;
}
