import { scopesAllow } from "../core/conversation-id";
import { opsText } from "../core/ops-text";
import type { EventInput, StoredEvent } from "../core/events";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import type { ReplyJob } from "../core/jobs";
import { appendToConversation } from "../durable/stub";
import type { BotReply } from "../external/bots";
import { recordIncident } from "../incidents";
import type { ModelReceipt } from "../model/compactor-model";
import type { StoredDeclaration } from "../storage/control/declarations";
import { readEventsByKeys } from "../storage/shard/events";
import { shardDatabaseOf } from "../storage/shards";
import { backoffSeconds } from "./retry";

/**
 * What a reply job writes into the log, and under which keys. Every write is keyed by the source
 * message (`reply:<agent>:<seq>:…`), so a redelivered job finds what an earlier attempt wrote: a
 * proposal is asked for once, and its run is never recorded twice.
 */

export type ReplyOutcome = { kind: "done" } | { kind: "retry"; delaySeconds: number };

export const replyKeys = (job: ReplyJob) => {
  const base = `reply:${job.agentId}:${job.sourceSeq}`;
  return { run: `${base}:run`, proposal: `${base}:proposal`, failed: `${base}:failed`, notice: `${base}:notice`, proposalId: `rp_${job.agentId}_${job.sourceSeq}` };
};

export async function appendEvents(env: Env, conversationId: string, events: EventInput[]): Promise<Result<StoredEvent[]>> {
  const appended = await appendToConversation(env, { conversationId, events });
  return appended.ok ? ok(appended.value.results.map((r) => r.event)) : appended;
}

/**
 * An agent writes only where its current sources admit it: a job queued before its sources
 * changed, or one that names another conversation, composes, asks, records and sends nothing.
 */
export function admits(declaration: StoredDeclaration, job: ReplyJob): boolean {
  return scopesAllow(declaration.registration.agent.sources, job.conversationId);
}

/** A failed reply attempt: a failed agent run and an incident, keyed by attempt so a redelivery adds its own. */
export async function recordReplyFailure(env: Env, job: ReplyJob, attempts: number, code: string, message: string): Promise<void> {
  const k = replyKeys(job);
  await appendEvents(env, job.conversationId, [
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
    message: opsText`attempt ${attempts}: ${code.slice(0, 64)}`,
    detail: message,
    createdAt: new Date().toISOString(),
  });
}

/** What a completed reply run records, whether a model or an external bot answered. */
export interface Answer {
  readonly provider: string;
  readonly model: string;
  readonly usage: ModelReceipt["usage"];
  readonly latencyMs: number;
  readonly text: string;
  readonly via?: BotReply["via"];
}

export type Produced = { kind: "proposal"; event: StoredEvent } | { kind: "stop"; outcome: ReplyOutcome };

/** The completed run and the proposal, in one batch: a reply is never recorded without its run. */
export async function recordAnswer(env: Env, job: ReplyJob, attempts: number, agentId: string, receipt: Answer, contextChars: number): Promise<Produced> {
  const k = replyKeys(job);
  const text = receipt.text.trim();
  const written = await appendEvents(env, job.conversationId, [
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
  const winner = (await readEventsByKeys(await shardDatabaseOf(env, job.conversationId), job.conversationId, [k.proposal])).get(k.proposal);
  return winner === undefined ? { kind: "stop", outcome: { kind: "retry", delaySeconds: backoffSeconds(env, attempts) } } : { kind: "proposal", event: winner };
}
