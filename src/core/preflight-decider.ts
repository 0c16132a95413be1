import type { CompactionPolicy, Registration } from "./declarations";
import { preflight } from "./compaction-plan";
import { compactorRunEvent } from "./compactor-runs";
import type { EventInput } from "./events";
import { capPressure } from "./selection";

/**
 * Preflight as a decider: from a chain's position (its active size as of a source, whether a run
 * is in flight, its backoff) to what the engine writes — a content-dark skipped run with its
 * reason and counts, or a plan. Nothing here reads or writes; the engine loads, decides, writes.
 */

export interface ActiveSize {
  readonly chars: number;
  readonly messages: number;
}

/** At the compactor's trigger, or near enough to one of the agent's own caps that it would soon bite. */
export function compactionDue(active: ActiveSize, policy: Pick<CompactionPolicy, "triggerInputChars">, caps: Registration["agent"]["context"]): boolean {
  return preflight(active.chars, policy).action === "plan" || capPressure(active, caps);
}

/** Whether a chain may plan at all now: one compaction in flight per chain, none while it backs off. */
export const mayPlan = (planOpen: boolean, backoffUntil: number, now: number): boolean => !planOpen && now >= backoffUntil;

export type SkipReason = "below_trigger" | "compaction_in_flight" | "backoff" | "nothing_to_freeze";

export interface PreflightInput {
  readonly compactorId: string;
  readonly sourceSeq: number;
  readonly active: ActiveSize;
  readonly policy: CompactionPolicy;
  readonly caps: Registration["agent"]["context"];
  readonly planOpen: boolean;
  /** Epoch ms before which the chain does not plan (0: not backing off). */
  readonly backoffUntil: number;
  readonly now: number;
}

export type PreflightDecision = { readonly action: "plan" } | { readonly action: "skip"; readonly reason: SkipReason; readonly event: EventInput };

export function decidePreflight(input: PreflightInput): PreflightDecision {
  const reason: SkipReason | undefined = !compactionDue(input.active, input.policy, input.caps)
    ? "below_trigger"
    : input.planOpen
      ? "compaction_in_flight"
      : input.now < input.backoffUntil
        ? "backoff"
        : undefined;
  return reason === undefined ? { action: "plan" } : { action: "skip", reason, event: skippedRun(input, reason) };
}

/**
 * The content-dark record of a source that did not plan: counts only, no text. Nothing is
 * reserved and no model is called. One per source and compactor (its run id names both).
 */
export function skippedRun(input: Pick<PreflightInput, "compactorId" | "sourceSeq" | "active" | "policy">, reason: SkipReason): EventInput {
  return compactorRunEvent(input.compactorId, `pf_${input.compactorId}_${input.sourceSeq}`, "skipped", {
    detail: {
      sourceSeq: input.sourceSeq,
      activeChars: input.active.chars,
      activeMessages: input.active.messages,
      triggerInputChars: input.policy.triggerInputChars,
      reason,
    },
  });
}
