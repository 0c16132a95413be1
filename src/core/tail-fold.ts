import type { Group } from "./compaction-plan";
import { groupTurns } from "./compaction-plan";
import type { StoredEvent } from "./events";
import type { ReconstructionPolicy } from "./reconstruction";
import { reconstruct } from "./reconstruction";

/**
 * The exact tail as its definition folds it, from the window's events: what `TailLedger` keeps
 * incrementally and must always equal (its property tests compare the two).
 */

/**
 * The window's tail events: a reply to a message the window does not hold would land in a covered
 * group, so it is an amendment of covered history, not a tail turn.
 */
export function tailEvents(window: readonly StoredEvent[]): StoredEvent[] {
  const sources = new Set(window.flatMap((e) => (e.kind === "source" ? [e.body.messageId] : [])));
  return window.filter((event) => !(event.kind === "proposal" && event.body.replyToMessageId !== undefined && !sources.has(event.body.replyToMessageId)));
}

/**
 * The whole groups opened after `after`, folded from every turn-shaping event after it (in order):
 * each such group is complete, since whatever speaks about a message comes after it in the log.
 */
export function groupsAfter(events: readonly StoredEvent[], after: number, policy: ReconstructionPolicy): Group[] {
  return groupTurns(reconstruct(tailEvents(events), policy).filter((turn) => turn.group > after));
}
