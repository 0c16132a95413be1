import type { BoundaryBody } from "./boundary";
import { boundaryHash } from "./boundary";
import type { Epoch } from "./declarations";
import type { ChainAnchor } from "./events";
import { hashCanonical } from "./hash";
import type { Packet } from "./packet";

/**
 * The resolver's verdict on a head boundary: is this the latest valid boundary of the current
 * epoch? Pure: the caller gathers the rows, the packet and the run evidence; this decides. Any
 * doubt fails closed with a code naming what is wrong — the agent is then served no summary
 * rather than an unverified one.
 */

export type ResolverFailureCode =
  | "missing_link"
  | "fork"
  | "stale_declaration"
  | "divergent_hash"
  | "wrong_route"
  | "fabricated_run"
  | "non_advancing";

export interface ResolverFailure {
  readonly code: ResolverFailureCode;
  readonly message: string;
}

export interface StoredLink {
  readonly id: string;
  readonly position: number;
  readonly previousId: string;
  readonly coveredThroughSeq: number;
  readonly runId: string;
  readonly hash: string;
  readonly body: BoundaryBody;
}

export interface HeadEvidence {
  readonly conversationId: string;
  readonly agentId: string;
  readonly epoch: Epoch;
  readonly promptHash: string;
  readonly historyAgents: readonly string[];
  readonly admitSensitive: boolean;
  readonly frontier: { readonly id: string; readonly hash: string };
  readonly head: StoredLink;
  /** The boundary named as the head's predecessor, when the head has one. */
  readonly previous: StoredLink | undefined;
  /** Boundaries of this epoch that share the head's predecessor, or its position (the head included). */
  readonly siblings: number;
  readonly plan: { readonly conversationId: string; readonly agentId: string; readonly epochId: string; readonly previousBoundaryId: string; readonly packetKey: string; readonly packetHash: string } | undefined;
  /** The packet as read from R2 and verified against the plan's hash; undefined when it was not. */
  readonly packet: Packet | undefined;
  readonly completedRun: boolean;
}

const failure = (code: ResolverFailureCode, message: string): { ok: false; error: ResolverFailure } => ({ ok: false, error: { code, message } });

/** The newest boundary row of an epoch as stored, reduced to what its anchor binds. */
export interface AnchoredRow {
  readonly id: string;
  readonly epochId: string;
  readonly position: number;
  readonly hash: string;
  /** `hashCanonical` of the stored body's `content`; undefined when the body is not a boundary. */
  readonly contentHash: string | undefined;
}

/**
 * Does the newest stored boundary of an epoch match what the log says the chain's head is? The
 * log's newest anchor (the completed run of the highest position in the epoch) names the head; the
 * rows are a table that can be edited behind the service's back, the log cannot. A head row that
 * was deleted (or never written) is `missing_link`, one whose body or content was rewritten, even
 * with a recomputed hash, `divergent_hash`. No anchor (no boundary settled yet, or only boundaries
 * settled before runs carried anchors) leaves the rows to the other checks.
 */
export function verifyAnchor(anchor: ChainAnchor | undefined, newest: AnchoredRow | undefined): { ok: true } | { ok: false; error: ResolverFailure } {
  if (anchor === undefined) return { ok: true };
  if (newest === undefined || newest.epochId !== anchor.epochId || newest.position < anchor.position) {
    const stored = newest === undefined ? "no boundary of its epoch is stored" : `the newest stored is ${newest.id} at position ${newest.position}`;
    return failure("missing_link", `boundary ${anchor.boundaryId} at position ${anchor.position}, settled by the log's newest completed run, is missing: ${stored}`);
  }
  if (newest.position > anchor.position || newest.id !== anchor.boundaryId) {
    return failure("fabricated_run", `boundary ${newest.id} at position ${newest.position} was settled by no completed run; the log's newest settled ${anchor.boundaryId} at position ${anchor.position}`);
  }
  if (newest.hash !== anchor.boundaryHash || newest.contentHash !== anchor.contentHash) {
    const what = newest.contentHash !== anchor.contentHash ? "content hash" : "hash";
    return failure("divergent_hash", `boundary ${newest.id} is stored with another ${what} than its completed run settled`);
  }
  return { ok: true };
}

export function verifyHead(e: HeadEvidence): { ok: true } | { ok: false; error: ResolverFailure } {
  const { head, previous, plan, packet } = e;
  const body = head.body;
  if (boundaryHash(body) !== head.hash || body.id !== head.id || body.position !== head.position || body.run.id !== head.runId || body.coveredThrough.seq !== head.coveredThroughSeq) {
    return failure("divergent_hash", `boundary ${head.id}: its body does not hash to its stored hash or disagrees with its row`);
  }
  if (body.compactor.epochId !== e.epoch.id || body.compactor.fingerprint !== e.epoch.fingerprint || body.compactor.version !== e.epoch.compactorVersion || body.compactor.promptHash !== e.promptHash) {
    return failure("stale_declaration", `boundary ${head.id} was produced under another declaration or prompt`);
  }
  const agents = [...e.historyAgents].sort();
  if (
    body.conversation.id !== e.conversationId ||
    body.targetAgentId !== e.agentId ||
    body.admitSensitive !== e.admitSensitive ||
    body.historyAgents.length !== agents.length ||
    body.historyAgents.some((a, i) => a !== agents[i])
  ) {
    return failure("wrong_route", `boundary ${head.id} belongs to another route, agent or privacy admission`);
  }
  if (e.siblings > 1) return failure("fork", `boundary ${head.id} has ${e.siblings - 1} competing sibling(s) in its epoch`);
  if (head.position === 1) {
    if (body.previous !== null || head.previousId !== "") return failure("missing_link", `boundary ${head.id} is first but names a predecessor`);
    if (body.frontier.id !== e.frontier.id || body.frontier.hash !== e.frontier.hash) {
      return failure("divergent_hash", `boundary ${head.id} does not start at this epoch's activation frontier`);
    }
  } else {
    if (body.previous === null || previous === undefined || previous.id !== body.previous.id || previous.id !== head.previousId || previous.position !== head.position - 1) {
      return failure("missing_link", `boundary ${head.id}'s predecessor is missing`);
    }
    if (
      previous.hash !== body.previous.hash ||
      boundaryHash(previous.body) !== previous.hash ||
      previous.body.id !== previous.id ||
      previous.body.position !== previous.position ||
      previous.body.coveredThrough.seq !== previous.coveredThroughSeq ||
      body.previous.coveredThroughSeq !== previous.coveredThroughSeq
    ) {
      return failure("divergent_hash", `boundary ${head.id} names a predecessor whose hash, row or coverage does not match`);
    }
    if (head.coveredThroughSeq <= previous.coveredThroughSeq) {
      return failure("non_advancing", `boundary ${head.id} does not advance coverage past ${previous.coveredThroughSeq}`);
    }
  }
  if (
    plan === undefined ||
    plan.conversationId !== e.conversationId ||
    plan.agentId !== e.agentId ||
    plan.epochId !== e.epoch.id ||
    plan.previousBoundaryId !== head.previousId ||
    plan.packetKey !== body.packet.key ||
    plan.packetHash !== body.packet.hash ||
    !e.completedRun
  ) {
    return failure("fabricated_run", `boundary ${head.id} has no matching plan and completed run ${head.runId}`);
  }
  if (
    packet === undefined ||
    packet.runId !== head.runId ||
    packet.frozen.throughSeq !== body.coveredThrough.seq ||
    packet.frozen.throughTurnId !== body.coveredThrough.turnId ||
    packet.frozen.turnIdsHash !== body.input.turnIdsHash ||
    packet.frozen.renderedHash !== body.input.renderedHash ||
    packet.epoch.id !== e.epoch.id ||
    hashCanonical(packet.amendments) !== body.input.amendmentsHash ||
    (packet.previousBoundary?.id ?? "") !== head.previousId
  ) {
    return failure("divergent_hash", `boundary ${head.id}'s packet is missing, altered, or does not match the boundary`);
  }
  return { ok: true };
}
