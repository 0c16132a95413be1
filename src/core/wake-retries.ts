import { z } from "zod";
import { opsText } from "./ops-text";
import type { OpsText } from "./ops-text";
import { extractionRunId } from "./extraction-plan";
import type { Wake } from "./wakeups";

/**
 * What happens when a deadline of a conversation's object fails (`core/wakeups`): its handler threw
 * when it came due, or the preflight a `catch_up` stands in for threw after an append. The deadline
 * is kept and tried again later, so nothing pending is lost; what must not happen is a failure that
 * repeats forever with nothing but a log line, or one that pages the operator on every retry.
 *
 * - The retry backs off: the base delay doubled for each failure in a row, at most an hour.
 * - The failures in a row are counted beside the deadline (a `streak`) until a handler succeeds.
 * - One failure is a blip the retry absorbs; `WAKE_FAILURES_BEFORE_INCIDENT` in a row are a
 *   condition: one `wake_failure` incident, raised once with the whole streak and counting every
 *   failure after it (`raiseIncident`: one open row, one notice), closed by the next success.
 */

/** The retry delay of a deadline whose handler threw, before doubling. */
export const WAKE_RETRY_BASE_MS = 30_000;
/** A reply hand-off's: people are waiting for the reply. */
const HANDOFF_RETRY_BASE_MS = 1_000;

/** The retry delay, before doubling, of a deadline of this kind whose handler threw. */
export const wakeRetryBaseMs = (wake: Wake): number => (wake.kind === "reply_handoff" ? HANDOFF_RETRY_BASE_MS : WAKE_RETRY_BASE_MS);
const WAKE_RETRY_MAX_MS = 3_600_000;

/** Failures in a row that make a failing deadline an incident. */
export const WAKE_FAILURES_BEFORE_INCIDENT = 3;

/** A deadline's failures in a row, and whether the incident for them was raised. */
export const wakeStreakSchema = z.strictObject({ failures: z.number().int().positive(), raised: z.boolean() });
export type WakeStreak = z.infer<typeof wakeStreakSchema>;

export interface WakeFailureStep {
  readonly streak: WakeStreak;
  /** When the deadline is tried again. */
  readonly retryAt: number;
  /** Occurrences to raise now (the whole streak the first time, then one each), or undefined: none. */
  readonly raise: number | undefined;
}

/** After a failure at `now`, given the streak before it. */
export function wakeFailureStep(previous: WakeStreak | undefined, now: number, baseMs: number): WakeFailureStep {
  const failures = (previous?.failures ?? 0) + 1;
  const raised = previous?.raised ?? false;
  const retryAt = now + Math.min(baseMs * 2 ** (failures - 1), WAKE_RETRY_MAX_MS);
  const raise = raised ? 1 : failures >= WAKE_FAILURES_BEFORE_INCIDENT ? failures : undefined;
  return { streak: { failures, raised }, retryAt, raise };
}

/** Whose deadline it is: an agent's chain, or (null) the conversation's own bookkeeping. */
export function wakeAgent(wake: Wake): string | null {
  switch (wake.kind) {
    case "catch_up":
    case "reply_handoff":
      return null;
    case "extraction":
      return wake.job.agentId;
    case "plan_watchdog":
    case "replan":
      return wake.agentId;
  }
}

/** The run a deadline is about, when it is about one: a plan's, or the extraction's own run id. */
export function wakeRun(wake: Wake): string | null {
  switch (wake.kind) {
    case "plan_watchdog":
      return wake.runId;
    case "extraction":
      return extractionRunId(wake.job.runId);
    case "catch_up":
    case "replan":
    case "reply_handoff":
      return null;
  }
}

/** The incident's message: codes, counts and the error's own words (never conversation text), bounded. */
export function wakeFailureMessage(wake: Wake, failures: number, retryAt: number, error: unknown): { message: OpsText; detail: string } {
  const detail = (error instanceof Error ? error.message : String(error)).slice(0, 300);
  const next = new Date(retryAt).toISOString();
  if (wake.kind === "extraction") {
    return { message: opsText`the extraction of ${wake.job.boundaryId} could not be sent again ${failures} times in a row, retried with backoff (next at ${next})`, detail };
  }
  return { message: opsText`the ${wake.kind} deadline failed ${failures} times in a row, retried with backoff (next at ${next})`, detail };
}
