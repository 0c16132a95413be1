import type { Author, StoredEvent } from "./events";
import { hashCanonical } from "./hash";
import { latestBelow } from "./sorted";

/**
 * Canonical reconstruction: a pure fold of the immutable log into effective turns.
 *
 * - A `source` opens a group (its sequence number) and yields a `user` turn whose text is the
 *   latest edit (by `editedAt`, then by sequence) of that message; a deleted message yields no turn.
 *   Corrections may arrive before the message they correct (Telegram redelivers out of order):
 *   they apply once it exists.
 * - A `proposal` yields an `assistant` turn only once a `delivery` says it reached the chat, only
 *   for admitted history agents, and it sits in the group of the message it replies to (so a late
 *   delivery lands where the reply belongs, not at the end).
 * - Turns are ordered by group, the user turn first, then replies by sequence. The same events
 *   always fold to the same turns, ids and hashes; compaction never changes this fold.
 */

export interface ReconstructionPolicy {
  /** Agents whose delivered replies count as history; `"all"` admits every agent. */
  readonly admittedAgents: ReadonlySet<string> | "all";
  /** Whether sensitive sources and replies are part of this view. */
  readonly includeSensitive: boolean;
}

export interface Turn {
  /** Stable id: `s<seq>` for the source message, `p<seq>` for the delivered proposal. */
  readonly id: string;
  /** The sequence number of the source event that opened this turn's group (0: before any source). */
  readonly group: number;
  readonly role: "user" | "assistant";
  readonly author: Author;
  readonly text: string;
  /** SHA-256 of the canonical `{ role, author, text }`: changes exactly when the turn's content does. */
  readonly hash: string;
  /** The sequence number of the event the turn comes from. */
  readonly originSeq: number;
  /** The newest event that shaped the turn (its correction or delivery), for amendment checks. */
  readonly effectiveSeq: number;
  readonly messageId: string;
  readonly sensitive: boolean;
  readonly edited: boolean;
}

type Source = Extract<StoredEvent, { kind: "source" }>;
type Proposal = Extract<StoredEvent, { kind: "proposal" }>;
type Correction = Extract<StoredEvent, { kind: "correction" }>;

/** When a correction was made: its timestamp as an instant (offsets and precision vary), else never. */
function correctionTime(c: Correction): number {
  const at = c.body.action === "edit" ? c.body.editedAt : c.body.deletedAt;
  return at === undefined ? Number.NEGATIVE_INFINITY : Date.parse(at);
}

/** Newer of two corrections of one message, `later` folded after `earlier` (a later sequence): a later instant wins, then the later sequence. */
function newer(earlier: Correction, later: Correction): Correction {
  return correctionTime(earlier) > correctionTime(later) ? earlier : later;
}

export function turnHash(role: Turn["role"], author: Author, text: string): string {
  return hashCanonical({ role, author, text });
}

type HashOf = (id: string, effectiveSeq: number, role: Turn["role"], author: Author, text: string) => string;

/**
 * `hashes` may carry turn hashes from an earlier fold of overlapping events, keyed by turn id and
 * the newest event that shaped the turn (so an edit or delivery misses the cache). Folding the same
 * window again then costs no hashing; the result is identical either way.
 */
export function reconstruct(events: readonly StoredEvent[], policy: ReconstructionPolicy, hashes?: Map<string, string>): Turn[] {
  const folded = foldEvents([...events].sort((a, b) => a.seq - b.seq));
  const hashOf = memoizedTurnHash(hashes);
  return [...userTurns(folded, policy, hashOf), ...assistantTurns(folded, policy, hashOf)].sort(
    (a, b) => a.group - b.group || roleRank(a) - roleRank(b) || a.originSeq - b.originSeq,
  );
}

function memoizedTurnHash(hashes: Map<string, string> | undefined): HashOf {
  return (id, effectiveSeq, role, author, text) => {
    if (hashes === undefined) return turnHash(role, author, text);
    const key = `${id}@${effectiveSeq}`;
    const known = hashes.get(key);
    if (known !== undefined) return known;
    const computed = turnHash(role, author, text);
    hashes.set(key, computed);
    return computed;
  };
}

/** What the events say, message by message: the first source of each id, whether it was deleted and its newest edit, each proposal once, and its first delivery. Runs shape no turn. */
interface Folded {
  readonly sourceByMessage: Map<string, Source>;
  readonly deleted: Set<string>;
  readonly latestEdit: Map<string, Correction>;
  readonly proposals: Proposal[];
  readonly deliveredAt: Map<string, number>;
  /** The sources' sequence numbers, ascending. */
  readonly sourceSeqs: number[];
}

function foldEvents(ordered: readonly StoredEvent[]): Folded {
  const folded: Omit<Folded, "sourceSeqs"> = { sourceByMessage: new Map(), deleted: new Set(), latestEdit: new Map(), proposals: [], deliveredAt: new Map() };
  const seenProposal = new Set<string>();
  for (const event of ordered) {
    switch (event.kind) {
      case "source":
        // A message id names one message; a second source reusing it is recorded, never folded in.
        if (!folded.sourceByMessage.has(event.body.messageId)) folded.sourceByMessage.set(event.body.messageId, event);
        break;
      case "correction": {
        const target = event.body.targetMessageId;
        if (event.body.action === "delete") {
          folded.deleted.add(target);
        } else {
          const current = folded.latestEdit.get(target);
          folded.latestEdit.set(target, current === undefined ? event : newer(current, event));
        }
        break;
      }
      case "proposal":
        if (!seenProposal.has(event.body.proposalId)) {
          seenProposal.add(event.body.proposalId);
          folded.proposals.push(event);
        }
        break;
      case "delivery":
        if (event.body.status === "delivered" && !folded.deliveredAt.has(event.body.proposalId)) {
          folded.deliveredAt.set(event.body.proposalId, event.seq);
        }
        break;
    }
  }
  // Sources were folded in sequence order, so their sequence numbers ascend.
  return { ...folded, sourceSeqs: [...folded.sourceByMessage.values()].map((source) => source.seq) };
}

function userTurns({ sourceByMessage, deleted, latestEdit }: Folded, policy: ReconstructionPolicy, hashOf: HashOf): Turn[] {
  const turns: Turn[] = [];
  for (const source of sourceByMessage.values()) {
    const messageId = source.body.messageId;
    if (deleted.has(messageId)) continue;
    const edit = latestEdit.get(messageId);
    const sensitive = source.sensitive || (edit?.sensitive ?? false);
    if (sensitive && !policy.includeSensitive) continue;
    const text = edit !== undefined && edit.body.action === "edit" ? edit.body.text : source.body.text;
    turns.push({
      id: `s${source.seq}`,
      group: source.seq,
      role: "user",
      author: source.body.author,
      text,
      hash: hashOf(`s${source.seq}`, Math.max(source.seq, edit?.seq ?? 0), "user", source.body.author, text),
      originSeq: source.seq,
      effectiveSeq: Math.max(source.seq, edit?.seq ?? 0),
      messageId,
      sensitive,
      edited: edit !== undefined,
    });
  }
  return turns;
}

function assistantTurns({ proposals, deliveredAt, sourceByMessage, sourceSeqs }: Folded, policy: ReconstructionPolicy, hashOf: HashOf): Turn[] {
  const turns: Turn[] = [];
  for (const proposal of proposals) {
    const deliverySeq = deliveredAt.get(proposal.body.proposalId);
    if (deliverySeq === undefined) continue;
    if (policy.admittedAgents !== "all" && !policy.admittedAgents.has(proposal.body.agentId)) continue;
    if (proposal.sensitive && !policy.includeSensitive) continue;
    const author: Author = { id: proposal.body.agentId };
    turns.push({
      id: `p${proposal.seq}`,
      group: groupOf(proposal, sourceByMessage, sourceSeqs),
      role: "assistant",
      author,
      text: proposal.body.text,
      hash: hashOf(`p${proposal.seq}`, Math.max(proposal.seq, deliverySeq), "assistant", author, proposal.body.text),
      originSeq: proposal.seq,
      effectiveSeq: Math.max(proposal.seq, deliverySeq),
      messageId: proposal.body.proposalId,
      sensitive: proposal.sensitive,
      edited: false,
    });
  }
  return turns;
}

const roleRank = (turn: Turn): number => (turn.role === "user" ? 0 : 1);

/** The group a reply belongs to: its replied-to message's, else the latest source before it. */
function groupOf(proposal: Proposal, sources: ReadonlyMap<string, Source>, sourceSeqs: readonly number[]): number {
  const replyTo = proposal.body.replyToMessageId;
  const target = replyTo === undefined ? undefined : sources.get(replyTo);
  return target?.seq ?? latestBelow(sourceSeqs, proposal.seq);
}
