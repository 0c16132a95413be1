import { z } from "zod";
import { MAX_BATCH_EVENTS } from "./events";
import { extractJobSchema } from "./jobs";
import type { ExtractJob } from "./jobs";

/**
 * The deadlines a conversation's object must keep across evictions and restarts. Each is a row of
 * the object's own storage (`durable/wakeups.ts`), the platform's single alarm is always set to the
 * earliest of them, and every firing handles the due ones and re-arms what remains. A deadline that
 * lived only in memory, or only in an alarm time that a later `setAlarm` moved, is lost the moment
 * the object is evicted, and a chain waiting on it waits forever.
 *
 * - `plan_watchdog`: an open plan with no boundary yet. When it fires the plan's job is sent again
 *   (the same packet: settling is idempotent, so a duplicate costs one model call) and the watchdog
 *   re-armed; a plan open past the stall threshold raises one `compaction_stalled` incident.
 * - `replan`: the backoff after a dead-lettered plan; when it fires the chain plans again without
 *   waiting for a new message.
 * - `catch_up`: bookkeeping that failed after an append was acknowledged; when it fires, every
 *   chain that was already active re-checks its trigger.
 * - `reply_handoff`: the reply jobs an append owes its replying agents. Armed before the append is
 *   written (so a write never commits without it), let go once the queue took every job; when it
 *   fires (the object crashed between the write and the send, or the send failed), the jobs of the
 *   sources the log holds as armed are sent again, with backoff. A job the queue took twice is
 *   harmless: a reply is written once under the keys of its source (`queue/reply-record`).
 * - `extraction`: a settled boundary whose extraction is owed. The queue consumer sends the job
 *   once, after settling, and nothing else would send it again (a settled run's redelivery is
 *   acked unrun), so a send that failed, timed out or lost its answer would drop it for good. The
 *   deadline is kept until the shard shows the extraction seen (`extractionStep`), and each time
 *   it fires unseen the job is sent again, with backoff; a send that keeps failing is a failing
 *   deadline like any other (`core/wake-retries`): one incident, never one per attempt.
 */

export const wakeSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("plan_watchdog"),
    at: z.number().int(),
    agentId: z.string(),
    epochId: z.string(),
    runId: z.string(),
    planCreatedAt: z.number().int(),
    /** How many times the plan's job was sent (1 at planning). */
    dispatches: z.number().int().nonnegative(),
    stalledReported: z.boolean(),
  }),
  z.strictObject({ kind: z.literal("replan"), at: z.number().int(), agentId: z.string(), epochId: z.string(), failures: z.number().int().positive() }),
  z.strictObject({ kind: z.literal("catch_up"), at: z.number().int() }),
  z.strictObject({
    kind: z.literal("reply_handoff"),
    at: z.number().int(),
    /** The sources the append writes: each one's place and hash, which the log must show before a job is sent for it. */
    sources: z.array(z.strictObject({ seq: z.number().int().positive(), hash: z.string().regex(/^[0-9a-f]{64}$/) })).min(1).max(MAX_BATCH_EVENTS),
    /** Hand-offs that failed in a row (the backoff's exponent). */
    failures: z.number().int().nonnegative(),
  }),
  z.strictObject({
    kind: z.literal("extraction"),
    at: z.number().int(),
    /** The job the settled boundary owes, sent again exactly as it is (extraction is idempotent per run). */
    job: extractJobSchema,
    settledAt: z.number().int(),
    /** How many times the object sent the job again (the consumer's own send is not counted). */
    resends: z.number().int().nonnegative(),
  }),
]);
export type Wake = z.infer<typeof wakeSchema>;
export type PlanWatchdog = Extract<Wake, { kind: "plan_watchdog" }>;
export type ExtractionWake = Extract<Wake, { kind: "extraction" }>;
export type ReplyHandoffWake = Extract<Wake, { kind: "reply_handoff" }>;

/**
 * Storage keys: one watchdog and one re-plan per agent (a chain has one plan open at a time), one
 * catch-up, one owed extraction per settled run (several boundaries can await theirs at once), and
 * one reply hand-off per append, by its first source's place.
 */
export const wakeKey = {
  watchdog: (agentId: string): string => `wake:watchdog:${agentId}`,
  replan: (agentId: string): string => `wake:replan:${agentId}`,
  extraction: (compactionRunId: string): string => `wake:extraction:${compactionRunId}`,
  replyHandoff: (firstSeq: number): string => `wake:reply:${firstSeq}`,
  catchUp: "wake:catch_up",
  prefix: "wake:",
} as const;

/** The time the alarm must be set to, or undefined when nothing is pending. */
export function earliestWake(wakes: Iterable<Wake>): number | undefined {
  const deadlines = Array.from(wakes, (wake) => wake.at);
  return deadlines.length === 0 ? undefined : Math.min(...deadlines);
}

/** The due wakes, earliest first. */
export function dueWakes<K>(wakes: ReadonlyMap<K, Wake>, now: number): [K, Wake][] {
  return [...wakes].filter(([, wake]) => wake.at <= now).sort(([, a], [, b]) => a.at - b.at);
}

export interface LivenessPolicy {
  readonly watchdogMs: number;
  readonly stalledMs: number;
}

/** The watchdog of a plan just dispatched (or found open without one: at most one period late). */
export function armWatchdog(plan: { agentId: string; epochId: string; runId: string; createdAt: number }, dispatches: number, now: number, policy: LivenessPolicy): PlanWatchdog {
  return {
    kind: "plan_watchdog",
    at: Math.max(now, plan.createdAt + policy.watchdogMs),
    agentId: plan.agentId,
    epochId: plan.epochId,
    runId: plan.runId,
    planCreatedAt: plan.createdAt,
    dispatches,
    stalledReported: false,
  };
}

export type WatchdogStep =
  | { readonly action: "drop" }
  | { readonly action: "redispatch"; readonly stalled: boolean; readonly next: PlanWatchdog };

/**
 * A due watchdog: drop it when its plan is no longer the chain's open plan (settled, abandoned,
 * or replaced); otherwise send the job again and re-arm, reporting the stall once the plan is
 * older than the threshold (once per plan: the incident pages an operator, the redispatches go on).
 */
export function watchdogStep(wake: PlanWatchdog, openRunId: string | undefined, now: number, policy: LivenessPolicy): WatchdogStep {
  if (openRunId !== wake.runId) return { action: "drop" };
  const stalled = !wake.stalledReported && now - wake.planCreatedAt >= policy.stalledMs;
  return {
    action: "redispatch",
    stalled,
    next: { ...wake, at: now + policy.watchdogMs, dispatches: wake.dispatches + 1, stalledReported: wake.stalledReported || stalled },
  };
}

const BACKOFF_MAX_MS = 3_600_000;

/** The re-plan after the `failures`-th consecutive dead-lettered plan: exponential, at most an hour. */
export function replanWake(agentId: string, epochId: string, failures: number, baseMs: number, now: number): Wake {
  return { kind: "replan", agentId, epochId, failures, at: now + Math.min(baseMs * 2 ** Math.max(0, failures - 1), BACKOFF_MAX_MS) };
}

/**
 * The extraction a boundary about to be stored owes, first due once its grace has passed: the
 * consumer's own send normally has it running well before then, and the deadline then only sees
 * that it ran. Armed before the boundary commits, so no boundary is ever stored without it (one
 * left for a settle that never committed finds no boundary and is dropped).
 */
export function armExtraction(job: ExtractJob, now: number, graceMs: number): ExtractionWake {
  return { kind: "extraction", at: now + graceMs, job, settledAt: now, resends: 0 };
}

/**
 * What the shard holds about an owed extraction (`storage/shard/extractions`): the boundary that owes
 * it, a completed extraction run, and a delivery of its job that failed (a failed attempt's incident).
 */
export interface ExtractionEvidence {
  readonly settled: boolean;
  readonly completed: boolean;
  readonly attempted: boolean;
}

export type ExtractionStep = { readonly action: "drop" } | { readonly action: "resend"; readonly next: ExtractionWake };

/**
 * A due extraction deadline. Dropped once the extraction was seen: completed, or delivered and failed
 * (the queue then owns it: it retries the job, and its dead letter records the abandonment; every
 * failed attempt is already an incident). Dropped too when no boundary exists: the settle that armed
 * it never committed, and one that does arms it again. Otherwise the job is sent again and the
 * deadline re-armed, each wait twice the one before, at most an hour: a job that is only slow to run
 * is sent again rarely, and a copy that crosses it is harmless.
 */
export function extractionStep(wake: ExtractionWake, evidence: ExtractionEvidence, now: number, graceMs: number): ExtractionStep {
  if (!evidence.settled || evidence.completed || evidence.attempted) return { action: "drop" };
  const resends = wake.resends + 1;
  return { action: "resend", next: { ...wake, resends, at: now + Math.min(graceMs * 2 ** resends, BACKOFF_MAX_MS) } };
}

/** How long an armed hand-off waits for the append that armed it to send its jobs: past it, the object crashed or the send failed. */
export const HANDOFF_GRACE_MS = 5_000;
/** The wait after a failed hand-off, doubled for each failure in a row, at most a minute: replies are awaited by people. */
const HANDOFF_RETRY_MS = 1_000;
const HANDOFF_RETRY_MAX_MS = 60_000;

/** The hand-off an append owes for these sources, armed before its write. */
export function armReplyHandoff(sources: readonly { readonly seq: number; readonly hash: string }[], now: number): ReplyHandoffWake {
  return { kind: "reply_handoff", at: now + HANDOFF_GRACE_MS, sources: sources.map(({ seq, hash }) => ({ seq, hash })), failures: 0 };
}

/** A hand-off whose send failed: kept, and due again after the backoff its failures in a row call for. */
export function handoffFailed(wake: ReplyHandoffWake, now: number): ReplyHandoffWake {
  const failures = wake.failures + 1;
  return { ...wake, failures, at: now + Math.min(HANDOFF_RETRY_MS * 2 ** (failures - 1), HANDOFF_RETRY_MAX_MS) };
}
