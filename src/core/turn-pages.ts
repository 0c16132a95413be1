import type { StoredEvent } from "./events";
import { push } from "./multimap";
import type { ReconstructionPolicy, Turn } from "./reconstruction";
import { reconstruct } from "./reconstruction";
import { partitionPoint } from "./sorted";

/**
 * One page of the canonical reconstruction — the turns of whole groups after `after` — read
 * without folding the whole log. The fold gives a group's turns from its own range of the log
 * (the group's source up to the next group's, where its unaddressed replies arrive) plus a few
 * events that may lie anywhere: an earlier source that already used the message id, edits and
 * deletions of the message, replies that name it, and the other events of those replies' ids
 * (deliveries, an earlier proposal of the same id, the message a reply names). The reader fetches
 * the range in chunks and those events through indexes (`readRelatedEvents` with replies); this
 * module decides, from what was read, which turns are certain and whether the page is complete.
 * The property tests hold every page to the whole-log fold.
 */

/** The ids a window of the log names, whose related events the fold needs from anywhere in the log. */
export function idsNamedBy(window: readonly StoredEvent[]): { messageIds: string[]; proposalIds: string[] } {
  const messageIds = new Set<string>();
  const proposalIds = new Set<string>();
  for (const event of window) {
    if (event.kind === "source") messageIds.add(event.body.messageId);
    if (event.kind === "proposal") proposalIds.add(event.body.proposalId);
  }
  return { messageIds: [...messageIds], proposalIds: [...proposalIds] };
}

export interface PageInput {
  /** The log from `after` on, in order: every event with `after < seq <= windowEnd`. */
  readonly window: readonly StoredEvent[];
  /** Whether the window reaches the end of the log. */
  readonly exhausted: boolean;
  /** Events related to the window's ids (`idsNamedBy`), from anywhere in the log; may overlap the window. */
  readonly related: readonly StoredEvent[];
  readonly policy: ReconstructionPolicy;
  readonly after: number;
  readonly limit: number;
}

export type PageResult =
  | { readonly complete: true; readonly turns: Turn[]; readonly nextAfter: number | null }
  /** The window is too short to decide: read more of the log and ask again. */
  | { readonly complete: false };

export function pageOfTurns({ window, exhausted, related, policy, after, limit }: PageInput): PageResult {
  const bySeq = new Map<number, StoredEvent>();
  for (const event of related) bySeq.set(event.seq, event);
  for (const event of window) bySeq.set(event.seq, event);
  const events = [...bySeq.values()].sort((a, b) => a.seq - b.seq);

  // Groups opened inside the window: sources whose message id no earlier source used.
  const firstSource = new Map<string, number>();
  for (const event of events) if (event.kind === "source" && !firstSource.has(event.body.messageId)) firstSource.set(event.body.messageId, event.seq);
  const windowEnd = window.at(-1)?.seq ?? after;
  const starts = [...firstSource.values()].filter((seq) => seq > after && seq <= windowEnd).sort((a, b) => a - b);
  // The newest group may still gain unaddressed replies beyond the window, unless the log ends there.
  const certainThrough = exhausted ? windowEnd : (starts.at(-1) ?? after + 1) - 1;

  const turns = reconstruct(events, policy).filter((turn) => turn.group > after && turn.group <= certainThrough);
  let end = Math.min(limit, turns.length);
  while (end < turns.length && turns[end]?.group === turns[end - 1]?.group) end += 1;
  if (end < turns.length) return { complete: true, turns: turns.slice(0, end), nextAfter: turns[end - 1]?.group ?? null };
  // Every certain turn fits: the page is final only if nothing can follow it.
  if (!exhausted) return { complete: false };
  return { complete: true, turns, nextAfter: null };
}

/**
 * A part of the log a frozen slice is checked against: the turns of the groups in
 * `(after, groupsThrough]` as the log stood at `through`. Their fold needs the log from `after`
 * through the first source that opens a group after `groupsThrough` (the events before it can
 * still join the slice's last group), and the events related to those by id up to `through`; never the rest of the log up
 * to `through`, however far appends outran the compactor that froze the slice.
 */
export interface SliceRange {
  readonly after: number;
  readonly groupsThrough: number;
  readonly through: number;
}

/** How far past a slice's groups the first read of the log reaches, and the first widening of it (each further one doubles). */
export const SLICE_STEP = 16;

/**
 * Where each read of a slice's window ends, in turn: `firstStep` events past its groups, then
 * widened by twice as much each time, up to `through` (the last). `LogIndex.slice` and
 * `readSliceLog` read on until the window opens the next group.
 */
export function* sliceWindowEnds({ after, groupsThrough, through }: SliceRange, firstStep = SLICE_STEP): Generator<number> {
  for (let end = Math.min(through, Math.max(after, groupsThrough) + firstStep), step = firstStep; ; step *= 2, end = Math.min(through, end + step)) {
    yield end;
    if (end >= through) return;
  }
}

/**
 * The message ids of the sources in `window` (the log from some point on) after `groupsThrough`
 * that no earlier source of the window used, in order: each opens a group unless a source before
 * the window used its id.
 */
export function groupCandidates(window: readonly StoredEvent[], groupsThrough: number): string[] {
  const seen = new Set<string>();
  const candidates: string[] = [];
  for (const event of window) {
    if (event.kind !== "source" || seen.has(event.body.messageId)) continue;
    seen.add(event.body.messageId);
    if (event.seq > groupsThrough) candidates.push(event.body.messageId);
  }
  return candidates;
}

/**
 * The first source of `window` (the log from some point on) that opens a group after
 * `groupsThrough`: the first candidate whose id no source before the window used (`usedBefore`);
 * `undefined` when the window opens none. A slice's window is read through it: with it in hand, an
 * event after it joins no group of the slice except by the ids the related read follows, whatever
 * else of the log is read beside it.
 */
export function nextGroupAfter(window: readonly StoredEvent[], groupsThrough: number, usedBefore: ReadonlySet<string>): number | undefined {
  const opener = groupCandidates(window, groupsThrough).find((id) => !usedBefore.has(id));
  return window.find((event) => event.kind === "source" && event.seq > groupsThrough && event.body.messageId === opener)?.seq;
}

/** The ids whose related events a slice's window needs: those its events name through the group after the slice (`nextGroupAfter`), or all of them if it opens none. */
export function sliceIds(window: readonly StoredEvent[], next: number | undefined): { messageIds: string[]; proposalIds: string[] } {
  return idsNamedBy(next === undefined ? window : window.filter((event) => event.seq <= next));
}

/**
 * A log held in memory, indexed the way `readRelatedEvents` (with replies) reads D1, so a page of
 * turns as of any point of the log costs its own range plus lookups rather than a fold of the
 * whole prefix (the chain audit checks every link's frozen slice this way).
 */
export class LogIndex {
  readonly #log: readonly StoredEvent[];
  readonly #sources = new Map<string, StoredEvent[]>();
  readonly #corrections = new Map<string, StoredEvent[]>();
  /** Proposals and deliveries by proposal id. */
  readonly #byProposal = new Map<string, StoredEvent[]>();
  /** Proposals by the message they answer. */
  readonly #replies = new Map<string, StoredEvent[]>();

  constructor(log: readonly StoredEvent[]) {
    this.#log = [...log].sort((a, b) => a.seq - b.seq);
    for (const event of this.#log) {
      if (event.kind === "source") push(this.#sources, event.body.messageId, event);
      if (event.kind === "correction") push(this.#corrections, event.body.targetMessageId, event);
      if (event.kind === "proposal" || event.kind === "delivery") push(this.#byProposal, event.body.proposalId, event);
      if (event.kind === "proposal" && event.body.replyToMessageId !== undefined) push(this.#replies, event.body.replyToMessageId, event);
    }
  }

  /** The events with `after < seq <= through`, in order. */
  range(after: number, through: number): StoredEvent[] {
    return this.#log.slice(this.#firstAbove(after), this.#firstAbove(through));
  }

  /** What `readRelatedEvents` with replies would read for these ids, as the log stood at `through`. */
  related(messageIds: readonly string[], proposalIds: readonly string[], through: number): StoredEvent[] {
    const found = new Map<number, StoredEvent>();
    const add = (events: readonly StoredEvent[] | undefined) => {
      for (const event of events ?? []) if (event.seq <= through) found.set(event.seq, event);
    };
    const replyIds = new Set<string>();
    for (const id of messageIds) {
      add(this.#sources.get(id));
      add(this.#corrections.get(id));
      for (const reply of this.#replies.get(id) ?? []) if (reply.kind === "proposal" && reply.seq <= through) replyIds.add(reply.body.proposalId);
    }
    for (const id of [...proposalIds, ...replyIds]) add(this.#byProposal.get(id));
    // The messages the named proposals answer.
    for (const id of proposalIds) {
      for (const event of this.#byProposal.get(id) ?? []) {
        if (event.kind === "proposal" && event.seq <= through && event.body.replyToMessageId !== undefined) add(this.#sources.get(event.body.replyToMessageId));
      }
    }
    return [...found.values()].sort((a, b) => a.seq - b.seq);
  }

  /**
   * What `readSliceLog` reads from D1 for `range`, read from this index: the log from `after`,
   * `SLICE_STEP` events past `groupsThrough` and widened by twice as many each time until it holds
   * the first source that opens a group after them (or reaches `through`), and the events related
   * to the window through that source, elsewhere up to `through`.
   */
  slice(range: SliceRange, firstStep = SLICE_STEP): StoredEvent[] {
    const { after, groupsThrough, through } = range;
    let window: StoredEvent[] = [];
    let end = after;
    let next: number | undefined;
    for (end of sliceWindowEnds(range, firstStep)) {
      window = this.range(after, end);
      const usedBefore = groupCandidates(window, groupsThrough).filter((id) => this.#sources.get(id)?.some((source) => source.seq <= after));
      next = nextGroupAfter(window, groupsThrough, new Set(usedBefore));
      if (next !== undefined) break;
    }
    const ids = sliceIds(window, next);
    const outside = this.related(ids.messageIds, ids.proposalIds, through).filter((event) => event.seq <= after || event.seq > end);
    return [...window, ...outside].sort((a, b) => a.seq - b.seq);
  }

  /** Index of the first event with seq > `seq`. */
  #firstAbove(seq: number): number {
    return partitionPoint(this.#log, (event) => event.seq <= seq);
  }
}

/**
 * Every turn of the groups in `(after, groupsThrough]` (every group after `after` unless bounded),
 * as the whole log through `through` folds them. The index may hold only part of the log: what
 * `LogIndex.slice` (or `readSliceLog` from D1) reads for that range, and any other events of it.
 */
export function turnsAsOf(index: LogIndex, policy: ReconstructionPolicy, after: number, through: number, groupsThrough = Number.MAX_SAFE_INTEGER): Turn[] {
  const window = index.range(after, through);
  const ids = idsNamedBy(window);
  const page = pageOfTurns({ window, exhausted: true, related: index.related(ids.messageIds, ids.proposalIds, through), policy, after, limit: Number.MAX_SAFE_INTEGER });
  return page.complete ? page.turns.filter((turn) => turn.group <= groupsThrough) : [];
}
