import type { Group } from "./compaction-plan";
import { groupTurns, turnChars } from "./compaction-plan";
import type { StoredEvent } from "./events";
import { push } from "./multimap";
import type { ReconstructionPolicy } from "./reconstruction";
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
 * Only the group an event touches is re-folded, with the same `reconstruct`, over that group's own
 * events; everything else is bookkeeping of which events belong to which group. Events must be
 * added in sequence order, each after `windowStart`.
 */
export class TailLedger {
  #tailChars = 0;
  #tailMessages = 0;
  #lastSeq: number;
  #refVersion = 0;
  readonly #groupChars = new Map<number, number>();
  readonly #groupMessages = new Map<number, number>();
  /** The first source of each message id: it opens the group; a later source reusing the id is never folded in. */
  readonly #sources = new Map<string, Source>();
  readonly #sourceByGroup = new Map<number, Source>();
  /** The sequence number of the newest of those first sources (0: none yet). */
  #lastSourceSeq = 0;
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
    readonly windowStart: number,
    private readonly hashes?: Map<string, string>,
  ) {
    this.#lastSeq = windowStart;
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
    switch (event.kind) {
      case "source":
        return this.#addSource(event);
      case "correction":
        return this.#addCorrection(event);
      case "proposal":
        return this.#addProposal(event);
      case "delivery":
        return this.#addDelivery(event);
      case "run":
        return;
    }
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

  #addSource(source: Source): void {
    const messageId = source.body.messageId;
    if (this.#sources.has(messageId)) return;
    this.#sources.set(messageId, source);
    this.#sourceByGroup.set(source.seq, source);
    this.#lastSourceSeq = source.seq;
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

  /** Re-decides which proposal of `id` the fold keeps; returns the groups that changed. */
  #reelect(id: string): number[] {
    const kept = (this.#proposals.get(id) ?? []).find((p) => p.body.replyToMessageId === undefined || this.#sources.has(p.body.replyToMessageId));
    const before = this.#effective.get(id);
    if (before?.proposal === kept) return [];
    const touched: number[] = [];
    if (before !== undefined) {
      this.#groupProposals.get(before.group)?.delete(id);
      this.#effective.delete(id);
      touched.push(before.group);
    }
    if (kept !== undefined) {
      const group = this.#groupOf(kept);
      this.#effective.set(id, { proposal: kept, group });
      let members = this.#groupProposals.get(group);
      if (members === undefined) this.#groupProposals.set(group, (members = new Set()));
      members.add(id);
      touched.push(group);
    }
    return touched;
  }

  /**
   * The group a kept reply belongs to: its message's, else the latest message before it (as the
   * fold decides). A reply without a message to answer is elected only when it is added (it
   * qualifies at once, so an earlier one of its id would already be kept), when every source the
   * ledger holds precedes it: the latest message before it is the newest one.
   */
  #groupOf(proposal: Proposal): number {
    const replyTo = proposal.body.replyToMessageId;
    const target = replyTo === undefined ? undefined : this.#sources.get(replyTo);
    return target?.seq ?? this.#lastSourceSeq;
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
    const turns = group <= this.windowStart ? [] : reconstruct(events, this.policy, this.hashes).filter((turn) => turn.group === group);
    const chars = turns.reduce((total, turn) => total + turnChars(turn), 0);
    this.#tailChars += chars - (this.#groupChars.get(group) ?? 0);
    this.#tailMessages += turns.length - (this.#groupMessages.get(group) ?? 0);
    if (chars === 0) this.#groupChars.delete(group);
    else this.#groupChars.set(group, chars);
    if (turns.length === 0) this.#groupMessages.delete(group);
    else this.#groupMessages.set(group, turns.length);
  }
}

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
