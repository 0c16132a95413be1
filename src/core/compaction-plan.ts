import type { CompactionPolicy } from "./declarations";
import type { Turn } from "./reconstruction";
import { renderTurn } from "./render";

/**
 * Pure planning: activation frontiers, preflight and the tail cut. Everything is measured in the
 * characters of the exact native messages the agent would receive (`renderTurn`), and cut only on
 * group boundaries, so a source message and the replies to it are never separated.
 */

export interface Group {
  /** Sequence number of the source event that opened the group. */
  readonly seq: number;
  readonly turns: readonly Turn[];
  readonly chars: number;
}

export const turnChars = (turn: Turn): number => renderTurn(turn).content.length;

/** Consecutive turns of one group together, in order. Turns must already be in canonical order. */
export function groupTurns(turns: readonly Turn[]): Group[] {
  const groups: Group[] = [];
  let current: { seq: number; turns: Turn[]; chars: number } | undefined;
  for (const turn of turns) {
    if (current === undefined || current.seq !== turn.group) {
      current = { seq: turn.group, turns: [], chars: 0 };
      groups.push(current);
    }
    current.turns.push(turn);
    current.chars += turnChars(turn);
  }
  return groups;
}

/**
 * Where a new epoch starts on an established conversation: the oldest of the newest whole groups
 * whose characters reach the trigger. Older history stays in the log but is never fed to this
 * epoch's compactor, so activation costs at most one trigger's worth of model input.
 */
export function frontierStartSeq(groups: readonly Group[], policy: Pick<CompactionPolicy, "triggerInputChars">): number {
  let chars = 0;
  for (const group of groups.toReversed()) {
    chars += group.chars;
    if (chars >= policy.triggerInputChars) return group.seq;
  }
  return groups[0]?.seq ?? 0;
}

export type PreflightDecision =
  | { readonly action: "skip"; readonly activeChars: number }
  | { readonly action: "plan"; readonly activeChars: number };

/** Below the trigger nothing is reserved and no model is called. */
export function preflight(activeChars: number, policy: Pick<CompactionPolicy, "triggerInputChars">): PreflightDecision {
  return { action: activeChars >= policy.triggerInputChars ? "plan" : "skip", activeChars };
}

export type PlanFailureCode = "tail_group_too_large" | "frozen_prefix_too_large" | "nothing_to_freeze";

export interface PlanFailure {
  readonly code: PlanFailureCode;
  readonly message: string;
}

export interface TailCut {
  readonly frozen: readonly Group[];
  readonly tail: readonly Group[];
  readonly frozenChars: number;
  readonly tailChars: number;
  readonly frozenEvents: number;
}

/**
 * Walks back over whole groups to keep an exact tail of at most `retainInputChars`, and freezes the
 * older ones (the oldest that fit the frozen-prefix bounds). Fails closed — never splits a group,
 * never cuts silently — when the newest group alone exceeds the tail target, when nothing would be
 * frozen, or when even the oldest group alone exceeds the frozen-prefix bounds.
 * `eventsOf` counts the log events a group stands for (sources, replies, corrections, deliveries).
 */
export function cutTail(
  groups: readonly Group[],
  policy: Pick<CompactionPolicy, "retainInputChars" | "maxFrozenChars" | "maxFrozenEvents">,
  eventsOf: (group: Group) => number,
  /** The agent's own bounds on the retained tail (`core/selection` `tailBounds`); the newest group is always retained. */
  tailCaps?: { readonly chars: number; readonly messages: number },
): { ok: true; value: TailCut } | { ok: false; error: PlanFailure } {
  const newest = groups.at(-1);
  if (newest !== undefined && newest.chars > policy.retainInputChars) {
    return {
      ok: false,
      error: {
        code: "tail_group_too_large",
        message: `the newest group has ${newest.chars} characters, more than the ${policy.retainInputChars}-character tail target`,
      },
    };
  }
  let start = groups.length;
  let tailChars = 0;
  let tailMessages = 0;
  for (const group of groups.toReversed()) {
    if (tailChars + group.chars > policy.retainInputChars) break;
    const overCaps = tailCaps !== undefined && (tailChars + group.chars > tailCaps.chars || tailMessages + group.turns.length > tailCaps.messages);
    if (overCaps && start < groups.length) break;
    tailChars += group.chars;
    tailMessages += group.turns.length;
    start -= 1;
  }
  const eligible = groups.slice(0, start);
  const oldest = eligible[0];
  if (oldest === undefined) {
    return { ok: false, error: { code: "nothing_to_freeze", message: "every uncovered group fits the tail; there is nothing to compact" } };
  }
  // When compaction fell behind (a run was in flight or backing off), more than one prefix's worth
  // may be waiting: freeze the oldest groups that fit the bounds and leave the rest exact for the
  // next run, which is planned as soon as this one settles. Nothing is cut; coverage just catches up.
  let frozenCount = 0;
  let frozenChars = 0;
  let frozenEvents = 0;
  for (const group of eligible) {
    const events = eventsOf(group);
    if (frozenChars + group.chars > policy.maxFrozenChars || frozenEvents + events > policy.maxFrozenEvents) break;
    frozenCount += 1;
    frozenChars += group.chars;
    frozenEvents += events;
  }
  if (frozenCount === 0) {
    return {
      ok: false,
      error: {
        code: "frozen_prefix_too_large",
        message: `the oldest uncovered group (${oldest.chars} characters, ${eventsOf(oldest)} events) exceeds the frozen-prefix bounds (${policy.maxFrozenChars}, ${policy.maxFrozenEvents})`,
      },
    };
  }
  const frozen = eligible.slice(0, frozenCount);
  const tail = groups.slice(frozenCount);
  return { ok: true, value: { frozen, tail, frozenChars, tailChars: tail.reduce((n, g) => n + g.chars, 0), frozenEvents } };
}
