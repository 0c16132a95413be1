import type { Group } from "./compaction-plan";
import type { NativeMessage } from "./render";
import { messageChars, renderTurn } from "./render";

/**
 * The ordinary agent's selector: historical projections first, then the exact tail. The exact
 * characters and message slots of the boundary and amendment envelopes are reserved before the
 * tail is bounded, and the tail is bounded in whole groups under the agent's normal policy.
 * Envelopes come first and the tail is appended, so between two compactions successive selections
 * share a byte-identical prefix (provider prompt caches keep hitting); when the agent's caps bite,
 * the tail is trimmed a segment at a time (`trimStart`), so the prefix holds across calls then too.
 */

export interface SelectionPolicy {
  readonly maxChars: number;
  readonly maxMessages: number;
}

export interface SelectionInput {
  /** Boundary and amendment envelopes, in that order (absent ones omitted). */
  readonly envelopes: readonly NativeMessage[];
  /** Uncovered groups, oldest first. */
  readonly groups: readonly Group[];
  readonly policy: SelectionPolicy;
}

export interface Selection {
  readonly messages: NativeMessage[];
  readonly reservedChars: number;
  readonly reservedMessages: number;
  readonly tail: { readonly groups: readonly Group[]; readonly chars: number; readonly messages: number };
  /** Older uncovered groups the agent's own policy left out (never silent: reported here). */
  readonly omitted: { readonly groups: number; readonly chars: number; readonly throughGroup: number | null };
  readonly totalChars: number;
}

export type SelectionFailure = { readonly code: "context_budget_exceeded"; readonly message: string };

export function selectContext({ envelopes, groups, policy }: SelectionInput): { ok: true; value: Selection } | { ok: false; error: SelectionFailure } {
  const reservedChars = messageChars(envelopes);
  const reservedMessages = envelopes.length;
  if (reservedChars > policy.maxChars || reservedMessages > policy.maxMessages) {
    return {
      ok: false,
      error: {
        code: "context_budget_exceeded",
        message: `the summary envelopes need ${reservedChars} characters and ${reservedMessages} messages; the agent allows ${policy.maxChars} and ${policy.maxMessages}`,
      },
    };
  }
  const start = trimStart(groups, policy.maxChars - reservedChars, policy.maxMessages - reservedMessages);
  const kept = groups.slice(start);
  const dropped = groups.slice(0, start);
  const chars = kept.reduce((n, g) => n + g.chars, 0);
  const messages = kept.reduce((n, g) => n + g.turns.length, 0);
  return {
    ok: true,
    value: {
      messages: [...envelopes, ...kept.flatMap((g) => g.turns.map(renderTurn))],
      reservedChars,
      reservedMessages,
      tail: { groups: kept, chars, messages },
      omitted: { groups: dropped.length, chars: dropped.reduce((n, g) => n + g.chars, 0), throughGroup: dropped.at(-1)?.seq ?? null },
      totalChars: reservedChars + chars,
    },
  };
}

/**
 * Where the kept tail starts when the agent's own caps bite (normally they do not: the compactor is
 * planned before they would, `capPressure`). Cutting the fewest groups that fit would drop the
 * oldest group on every call while a compaction is in flight, so no two responses would share a
 * prefix and a provider's prompt cache would miss every time. Instead the tail may start only at
 * anchors laid oldest-first over the uncovered groups — a new anchor once the groups since the last
 * one would pass half the tail budget (characters or messages) — and it starts at the first anchor
 * whose suffix fits. Anchors depend only on the groups before them, so appending a group never
 * moves one: the start stays put (the new response extends the previous one) until that suffix no
 * longer fits, then jumps a whole segment, about half the budget, at once. A single group larger
 * than half the budget is a segment of its own; when even the newest does not fit, nothing does.
 */
export function trimStart(groups: readonly Group[], maxChars: number, maxMessages: number): number {
  const stepChars = Math.floor(maxChars / 2);
  const stepMessages = Math.floor(maxMessages / 2);
  let suffixChars = groups.reduce((n, g) => n + g.chars, 0);
  let suffixMessages = groups.reduce((n, g) => n + g.turns.length, 0);
  let segmentChars = 0;
  let segmentMessages = 0;
  for (const [i, group] of groups.entries()) {
    const opensSegment = i === 0 || segmentChars + group.chars > stepChars || segmentMessages + group.turns.length > stepMessages;
    if (opensSegment) {
      if (suffixChars <= maxChars && suffixMessages <= maxMessages) return i;
      segmentChars = 0;
      segmentMessages = 0;
    }
    segmentChars += group.chars;
    segmentMessages += group.turns.length;
    suffixChars -= group.chars;
    suffixMessages -= group.turns.length;
  }
  return groups.length;
}

/**
 * The compactor's trigger also answers to the agent's own caps: a compaction is planned once the
 * active context reaches three quarters of `maxChars` or `maxMessages`, so the run has the last
 * quarter to settle in before a cap bites and the served window would have to be trimmed.
 */
const CAP_PLAN_SHARE = 0.75;

export function capPressure(active: { readonly chars: number; readonly messages: number }, caps: SelectionPolicy): boolean {
  return active.chars >= caps.maxChars * CAP_PLAN_SHARE || active.messages >= caps.maxMessages * CAP_PLAN_SHARE;
}

/**
 * The most exact tail a plan may retain under the agent's caps, so that after the boundary settles
 * the tail has room to grow again before the next plan (and never starts at the cap it was planned
 * to relieve): half of `maxChars`, and a quarter of `maxMessages`. Short messages reach the message
 * cap long before the character trigger; retaining half of it would leave each run a quarter of
 * the cap to freeze, so runs would come twice as often and each would pay the prompt and the
 * previous boundary again for half the slice.
 */
export function tailBounds(caps: SelectionPolicy): { readonly chars: number; readonly messages: number } {
  return { chars: Math.floor(caps.maxChars / 2), messages: Math.floor(caps.maxMessages / 4) };
}

/** Why a reply cannot be composed as of the message it answers. */
export type AsOfFailure =
  | { readonly reason: "source_covered"; readonly sourceSeq: number; readonly coveredThroughSeq: number }
  | { readonly reason: "source_absent"; readonly sourceSeq: number };

/**
 * The groups as they stood at a source message, for a reply to it: through that message's own
 * group and never a later one, so each reply of a burst answers its own message (the request ends
 * there) instead of all of them answering the newest. What the log now holds about those groups
 * (edits, replies delivered since) stays. A message already summarized by the chain's head cannot
 * be answered as of itself — the summary covers later turns too — and a message that is no longer
 * a turn (deleted, not admitted) is not answered at all.
 */
export function groupsAsOf(groups: readonly Group[], sourceSeq: number, coveredThroughSeq: number): { ok: true; value: Group[] } | { ok: false; error: AsOfFailure } {
  if (sourceSeq <= coveredThroughSeq) return { ok: false, error: { reason: "source_covered", sourceSeq, coveredThroughSeq } };
  const kept = groups.filter((g) => g.seq <= sourceSeq);
  if (kept.at(-1)?.seq !== sourceSeq) return { ok: false, error: { reason: "source_absent", sourceSeq } };
  return { ok: true, value: kept };
}
