import type { Group } from "./compaction-plan";
import { turnChars } from "./compaction-plan";
import type { StoredEvent } from "./events";
import { GroupUndo } from "./group-undo";
import { push } from "./multimap";
import { latestBelow, partitionPoint } from "./sorted";
import type { ReconstructionPolicy, Turn } from "./reconstruction";
import { reconstruct } from "./reconstruction";

type Source = Extract<StoredEvent, { kind: "source" }>;
type Proposal = Extract<StoredEvent, { kind: "proposal" }>;
type Correction = Extract<StoredEvent, { kind: "correction" }>;
type Delivery = Extract<StoredEvent, { kind: "delivery" }>;

/**
 * Running totals of a chain's uncovered window, kept as events arrive, so that preflight after an
 * append costs the same on a young conversation and on one whose window holds a full trigger's
 * worth of turns.
 *
 * It answers the questions the fold over the whole window answers, and must answer them exactly
 * as the fold does (the property tests compare the two on arbitrary logs):
 * - `tailChars` and `tailMessages`: the characters and the number of the exact tail turns, i.e.
 *   the groups of `reconstruct(tailEvents(window))` after `windowStart`, where a reply to a
 *   message the window does not hold is not a tail turn (`tailEvents`);
 * - `references(absorbedThroughSeq)`: which messages and proposals outside the window later events
 *   speak about — the ids whose history an amendment must be derived from.
 *
 * - `groups()`: those turns themselves, in whole groups, as the fold gives them.
 *
 * Only the group an event touches is re-folded, with the same `reconstruct`, over that group's own
 * events; everything else is bookkeeping of which events belong to which group. Events must be
 * added in sequence order, each after `windowStart`. When a boundary covers the window's oldest
 * groups, `trim` moves `windowStart` past them at the cost of what it covers: the ledger is then the
 * one a fresh ledger over the rest of the window would be, without folding the rest again.
 */
export class TailLedger {
  #tailChars = 0;
  #tailMessages = 0;
  #lastSeq: number;
  #windowStart: number;
  #refVersion = 0;
  /** The event being added (undefined while trimming): its re-folds are recorded for `groupsAsOf`. */
  #adding: number | undefined;
  readonly #undo: GroupUndo;
  /** Each group that folds to any turn, with its turns and their characters, by the group's sequence number. */
  readonly #groups = new Map<number, Group>();
  /** The first source of each message id: it opens the group; a later source reusing the id is never folded in. */
  readonly #sources = new Map<string, Source>();
  readonly #sourceByGroup = new Map<number, Source>();
  /** The groups those first sources open, ascending. */
  readonly #openGroups: number[] = [];
  /** Later sources reusing a held id, in order: one opens a group once the first leaves the window. */
  readonly #laterSources = new Map<string, Source[]>();
  /** Every proposal that replies to a message, by that message id, in order. */
  readonly #repliesTo = new Map<string, Proposal[]>();
  readonly #corrections = new Map<string, Correction[]>();
  /** Every proposal of an id, in order; the fold keeps the first one that is a tail event. */
  readonly #proposals = new Map<string, Proposal[]>();
  /** The proposal of each id the fold keeps, and its group. */
  readonly #effective = new Map<string, { proposal: Proposal; group: number }>();
  readonly #groupProposals = new Map<number, Set<string>>();
  readonly #deliveries = new Map<string, Delivery[]>();
  /** Corrections and replies naming a message the window does not hold (yet), by message id. */
  readonly #outsideCorrections = new Map<string, number[]>();
  readonly #outsideReplies = new Map<string, { proposalId: string; seq: number }[]>();
  /** Deliveries of a proposal the window does not hold (yet), by proposal id. */
  readonly #outsideDeliveries = new Map<string, number[]>();

  constructor(
    private readonly policy: ReconstructionPolicy,
    windowStart: number,
    private readonly hashes?: Map<string, string>,
    undoEntries?: number,
  ) {
    this.#lastSeq = windowStart;
    this.#windowStart = windowStart;
    this.#undo = new GroupUndo(windowStart, undoEntries);
  }

  /** Characters of the exact tail turns (whole groups after `windowStart`). */
  get tailChars(): number {
    return this.#tailChars;
  }

  /** Turns of the exact tail: one provider message each, what the agent's `maxMessages` counts. */
  get tailMessages(): number {
    return this.#tailMessages;
  }

  /** The newest event added (`windowStart` before any). */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** Changes whenever an added event could change the amendments derived from `references`. */
  get refVersion(): number {
    return this.#refVersion;
  }

  add(event: StoredEvent): void {
    if (event.seq <= this.#lastSeq) throw new RangeError(`events must be added in order: ${event.seq} after ${this.#lastSeq}`);
    this.#lastSeq = event.seq;
    this.#adding = event.seq;
    switch (event.kind) {
      case "source":
        this.#addSource(event);
        break;
      case "correction":
        this.#addCorrection(event);
        break;
      case "proposal":
        this.#addProposal(event);
        break;
      case "delivery":
        this.#addDelivery(event);
        break;
      case "run":
        break;
    }
    this.#adding = undefined;
  }

  /**
   * `groups()` as of `seq`, an event at or after `windowStart` the ledger has added: what the events
   * through it fold to. Undefined when that is further back than the ledger remembers (`GroupUndo`);
   * the caller folds the window instead.
   */
  groupsAsOf(seq: number): Group[] | undefined {
    const then = this.#undo.asOf(seq);
    if (then === undefined) return undefined;
    const groups: Group[] = [];
    for (const seqOfGroup of this.#openGroups) {
      if (seqOfGroup > seq) break;
      const group = then.has(seqOfGroup) ? then.get(seqOfGroup) : this.#groups.get(seqOfGroup);
      if (group !== undefined) groups.push(group);
    }
    return groups;
  }

  /** The message and proposal ids, outside the window, that events after `absorbedThroughSeq` speak about. */
  references(absorbedThroughSeq: number): { messageIds: string[]; proposalIds: string[] } {
    const messageIds = new Set<string>();
    const proposalIds = new Set<string>();
    const after = (seqs: readonly number[]) => seqs.some((seq) => seq > absorbedThroughSeq);
    for (const [messageId, seqs] of this.#outsideCorrections) if (after(seqs)) messageIds.add(messageId);
    for (const [messageId, replies] of this.#outsideReplies) {
      for (const reply of replies) {
        if (reply.seq <= absorbedThroughSeq) continue;
        messageIds.add(messageId);
        proposalIds.add(reply.proposalId);
      }
    }
    for (const [proposalId, seqs] of this.#outsideDeliveries) if (after(seqs)) proposalIds.add(proposalId);
    return { messageIds: [...messageIds], proposalIds: [...proposalIds] };
  }

  /** The exact tail's turns in whole groups, oldest first: what folding the window gives (`groupsAfter`). */
  groups(): Group[] {
    const groups: Group[] = [];
    for (const seq of this.#openGroups) {
      const group = this.#groups.get(seq);
      if (group !== undefined) groups.push(group);
    }
    return groups;
  }

  #addSource(source: Source): void {
    const messageId = source.body.messageId;
    if (this.#sources.has(messageId)) {
      push(this.#laterSources, messageId, source);
      return;
    }
    this.#openGroups.push(source.seq);
    this.#hold(source);
  }

  /** A source becomes its id's first in the window: it opens its group, and what waited for it joins. */
  #hold(source: Source): void {
    const messageId = source.body.messageId;
    this.#sources.set(messageId, source);
    this.#sourceByGroup.set(source.seq, source);
    const replies = this.#outsideReplies.get(messageId);
    const corrected = this.#outsideCorrections.delete(messageId);
    const repliedTo = this.#outsideReplies.delete(messageId);
    if (corrected || repliedTo) this.#refVersion += 1;
    const touched = new Set<number>([source.seq]);
    // Replies that arrived before their message are tail events now: each may become the kept
    // proposal of its id, moving that id out of another group.
    for (const reply of replies ?? []) for (const group of this.#reelect(reply.proposalId)) touched.add(group);
    for (const group of touched) this.#refold(group);
  }

  #addCorrection(correction: Correction): void {
    this.#refVersion += 1;
    const target = correction.body.targetMessageId;
    push(this.#corrections, target, correction);
    const source = this.#sources.get(target);
    if (source === undefined) {
      push(this.#outsideCorrections, target, correction.seq);
      return;
    }
    this.#refold(source.seq);
  }

  #addProposal(proposal: Proposal): void {
    this.#refVersion += 1;
    const id = proposal.body.proposalId;
    push(this.#proposals, id, proposal);
    this.#outsideDeliveries.delete(id);
    const replyTo = proposal.body.replyToMessageId;
    if (replyTo !== undefined) push(this.#repliesTo, replyTo, proposal);
    if (replyTo !== undefined && !this.#sources.has(replyTo)) push(this.#outsideReplies, replyTo, { proposalId: id, seq: proposal.seq });
    for (const group of this.#reelect(id)) this.#refold(group);
  }

  #addDelivery(delivery: Delivery): void {
    this.#refVersion += 1;
    const id = delivery.body.proposalId;
    push(this.#deliveries, id, delivery);
    if (!this.#proposals.has(id)) push(this.#outsideDeliveries, id, delivery.seq);
    const kept = this.#effective.get(id);
    if (kept !== undefined) this.#refold(kept.group);
  }

  /**
   * @internal Everything the ledger holds, list by list, each entry as its key and the sequence
   * numbers under it, sorted: for the tests that hold a trimmed ledger to a fresh one over the same
   * events, so that no list keeps what left the window (what it holds is what it has to).
   */
  census(): Record<string, string[]> {
    const seqs = <V>(map: ReadonlyMap<string | number, readonly V[]>, show: (value: V) => string | number): string[] =>
      [...map].map(([key, values]) => `${key}:${[...values].map(show).join(",")}`).sort();
    const bySeq = (event: StoredEvent): number => event.seq;
    return {
      groups: [...this.#groups.keys()].map(String).sort(),
      sources: [...this.#sources].map(([id, source]) => `${id}:${source.seq}`).sort(),
      sourceByGroup: [...this.#sourceByGroup.keys()].map(String).sort(),
      openGroups: this.#openGroups.map(String),
      laterSources: seqs(this.#laterSources, bySeq),
      repliesTo: seqs(this.#repliesTo, bySeq),
      corrections: seqs(this.#corrections, bySeq),
      proposals: seqs(this.#proposals, bySeq),
      effective: [...this.#effective].map(([id, { proposal, group }]) => `${id}:${proposal.seq}@${group}`).sort(),
      // A group's replies are a set (its fold sorts their events by sequence): listed sorted, not in
      // the order they happened to join.
      groupProposals: [...this.#groupProposals].map(([group, ids]) => `${group}:${[...ids].sort().join(",")}`).sort(),
      deliveries: seqs(this.#deliveries, bySeq),
      outsideCorrections: seqs(this.#outsideCorrections, (seq) => seq),
      outsideReplies: seqs(this.#outsideReplies, (reply) => `${reply.proposalId}@${reply.seq}`),
      outsideDeliveries: seqs(this.#outsideDeliveries, (seq) => seq),
    };
  }

  /**
   * Moves the window's start past a boundary's coverage. `trimmed` are the window's events at or
   * before `newStart`, in order. Afterwards the ledger is the one a fresh ledger over the events
   * after `newStart` would be: what spoke about a message that left the window now speaks about
   * covered history (a reference), a later source reusing the id of one that left opens its group,
   * and only the groups the trimmed events shaped are folded again.
   */
  trim(newStart: number, trimmed: readonly StoredEvent[]): void {
    if (newStart <= this.#windowStart) return;
    this.#windowStart = newStart;
    this.#lastSeq = Math.max(this.#lastSeq, newStart);
    this.#refVersion += 1;
    const touched = new Set<number>();
    const left: string[] = [];
    const reelect = new Set<string>();
    for (const event of trimmed) {
      if (event.seq > newStart) throw new RangeError(`event ${event.seq} is not at or before ${newStart}`);
      const forgotten = this.#forget(event);
      if (forgotten.left !== undefined) left.push(forgotten.left);
      if (forgotten.proposalId !== undefined) reelect.add(forgotten.proposalId);
      if (forgotten.group !== undefined) touched.add(forgotten.group);
    }
    for (const group of this.#openGroups.splice(0, partitionPoint(this.#openGroups, (group) => group <= newStart))) {
      this.#setGroup(group, []);
      // A reply the window still holds, in a group that left it, belongs where the fold now puts it
      // (deciding it again takes it out of the group, and the group's emptied list with it).
      for (const id of this.#groupProposals.get(group) ?? []) reelect.add(id);
    }
    for (const messageId of left) for (const group of this.#leave(messageId)) touched.add(group);
    for (const id of reelect) {
      if (!this.#proposals.has(id)) {
        const deliveries = this.#deliveries.get(id);
        if (deliveries !== undefined) this.#outsideDeliveries.set(id, deliveries.map((d) => d.seq));
      }
      for (const group of this.#reelect(id)) touched.add(group);
    }
    const refolded = new Set([...touched].filter((group) => group > newStart));
    for (const group of refolded) this.#refold(group);
    this.#undo.trim(newStart, refolded, this.#lastSeq);
  }

  /**
   * Takes one trimmed event out of the ledger's lists: says the group it shaped, the proposal id whose
   * kept reply must be decided again, or the message id whose first source it was.
   */
  #forget(event: StoredEvent): { group?: number | undefined; proposalId?: string; left?: string } {
    switch (event.kind) {
      case "source": {
        const messageId = event.body.messageId;
        if (this.#sources.get(messageId) !== event) {
          dropFirst(this.#laterSources, messageId, event);
          return {};
        }
        this.#sources.delete(messageId);
        this.#sourceByGroup.delete(event.seq);
        return { left: messageId };
      }
      case "correction": {
        const target = event.body.targetMessageId;
        dropFirst(this.#corrections, target, event);
        dropFirst(this.#outsideCorrections, target, event.seq);
        return { group: this.#sources.get(target)?.seq };
      }
      case "proposal": {
        const replyTo = event.body.replyToMessageId;
        dropFirst(this.#proposals, event.body.proposalId, event);
        if (replyTo !== undefined) {
          dropFirst(this.#repliesTo, replyTo, event);
          const waiting = this.#outsideReplies.get(replyTo);
          if (waiting?.[0]?.seq === event.seq) dropFirst(this.#outsideReplies, replyTo, waiting[0]);
        }
        return { proposalId: event.body.proposalId };
      }
      case "delivery": {
        const id = event.body.proposalId;
        dropFirst(this.#deliveries, id, event);
        dropFirst(this.#outsideDeliveries, id, event.seq);
        return { group: this.#effective.get(id)?.group };
      }
      case "run":
        return {};
    }
  }

  /**
   * The first source of `messageId` left the window: the next source reusing the id opens its group
   * (and takes the id's corrections and replies), or else what speaks about the id speaks about
   * covered history. Returns the groups that changed.
   */
  #leave(messageId: string): number[] {
    const later = this.#laterSources.get(messageId);
    const next = later?.shift();
    if (later?.length === 0) this.#laterSources.delete(messageId);
    const replies = this.#repliesTo.get(messageId) ?? [];
    if (next === undefined) {
      const corrections = this.#corrections.get(messageId);
      if (corrections !== undefined) this.#outsideCorrections.set(messageId, corrections.map((c) => c.seq));
      if (replies.length > 0) this.#outsideReplies.set(messageId, replies.map((p) => ({ proposalId: p.body.proposalId, seq: p.seq })));
      return replies.flatMap((reply) => this.#reelect(reply.body.proposalId));
    }
    this.#openGroups.splice(partitionPoint(this.#openGroups, (group) => group < next.seq), 0, next.seq);
    this.#hold(next);
    // The new group takes the replies to its message, and the plain replies after it whose latest
    // message before them was an older one.
    const touched = [next.seq, ...replies.flatMap((reply) => this.#reelect(reply.body.proposalId))];
    for (const [id, { proposal, group }] of [...this.#effective]) {
      if (proposal.body.replyToMessageId === undefined && proposal.seq > next.seq && group < next.seq) touched.push(...this.#reelect(id));
    }
    return touched;
  }

  /** Re-decides which proposal of `id` the fold keeps, and in which group; returns the groups that changed. */
  #reelect(id: string): number[] {
    const kept = (this.#proposals.get(id) ?? []).find((p) => p.body.replyToMessageId === undefined || this.#sources.has(p.body.replyToMessageId));
    const before = this.#effective.get(id);
    const group = kept === undefined ? undefined : this.#groupOf(kept);
    if (before?.proposal === kept && before?.group === group) return [];
    const touched: number[] = [];
    if (before !== undefined) {
      const members = this.#groupProposals.get(before.group);
      members?.delete(id);
      if (members?.size === 0) this.#groupProposals.delete(before.group);
      this.#effective.delete(id);
      touched.push(before.group);
    }
    if (kept !== undefined && group !== undefined) {
      this.#effective.set(id, { proposal: kept, group });
      let members = this.#groupProposals.get(group);
      if (members === undefined) this.#groupProposals.set(group, (members = new Set()));
      members.add(id);
      touched.push(group);
    }
    return touched;
  }

  /** The group a kept reply belongs to: its message's, else the latest message the window holds before it (as the fold decides; 0: none). */
  #groupOf(proposal: Proposal): number {
    const replyTo = proposal.body.replyToMessageId;
    const target = replyTo === undefined ? undefined : this.#sources.get(replyTo);
    return target?.seq ?? latestBelow(this.#openGroups, proposal.seq);
  }

  /** Folds one group from its own events, exactly as the whole-window fold would, and updates the total. */
  #refold(group: number): void {
    const events: StoredEvent[] = [];
    const source = this.#sourceByGroup.get(group);
    if (source !== undefined) {
      events.push(source, ...(this.#corrections.get(source.body.messageId) ?? []));
    }
    for (const id of this.#groupProposals.get(group) ?? []) {
      const kept = this.#effective.get(id);
      if (kept !== undefined) events.push(kept.proposal, ...(this.#deliveries.get(id) ?? []));
    }
    const turns = group <= this.#windowStart ? [] : reconstruct(events, this.policy, this.hashes).filter((turn) => turn.group === group);
    this.#setGroup(group, turns);
  }

  /** Records a group's folded turns and moves the totals by the difference. */
  #setGroup(seq: number, turns: Turn[]): void {
    const before = this.#groups.get(seq);
    if (this.#adding !== undefined) this.#undo.record(this.#adding, seq, before);
    const chars = turns.reduce((total, turn) => total + turnChars(turn), 0);
    this.#tailChars += chars - (before?.chars ?? 0);
    this.#tailMessages += turns.length - (before?.turns.length ?? 0);
    if (turns.length === 0) this.#groups.delete(seq);
    else this.#groups.set(seq, { seq, turns, chars });
  }
}

/** Takes `value` off the front of its list under `key` (the list of a trimmed event starts with it), dropping an emptied list. */
function dropFirst<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list?.[0] !== value) return;
  list.shift();
  if (list.length === 0) map.delete(key);
}
