import { z } from "zod";

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
]);
export type Wake = z.infer<typeof wakeSchema>;
export type PlanWatchdog = Extract<Wake, { kind: "plan_watchdog" }>;

/** Storage keys: one watchdog and one re-plan per agent (a chain has one plan open at a time), one catch-up. */
export const wakeKey = {
  watchdog: (agentId: string): string => `wake:watchdog:${agentId}`,
  replan: (agentId: string): string => `wake:replan:${agentId}`,
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
