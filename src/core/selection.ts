import type { Group } from "./compaction-plan";
import type { NativeMessage } from "./render";
import { messageChars, renderTurn } from "./render";

/**
 * The ordinary agent's selector: historical projections first, then the exact tail. The exact
 * characters and message slots of the boundary and amendment envelopes are reserved before the
 * tail is bounded, and the tail is bounded in whole groups from the newest back, under the agent's
 * normal policy. Envelopes come first and the tail is appended, so between two compactions
 * successive selections share a byte-identical prefix (provider prompt caches keep hitting).
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
  let chars = 0;
  let messages = 0;
  let start = groups.length;
  while (start > 0) {
    const group = groups[start - 1];
    if (group === undefined) break;
    if (reservedChars + chars + group.chars > policy.maxChars || reservedMessages + messages + group.turns.length > policy.maxMessages) break;
    chars += group.chars;
    messages += group.turns.length;
    start -= 1;
  }
  const kept = groups.slice(start);
  const dropped = groups.slice(0, start);
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
