import type { AuditPlan, AuditRun, CheckName, LinkFacts, LinkRow } from "./chain-audit-link";
import { CHECK_NAMES, parseBoundaryBody } from "./chain-audit-link";
import { LINK_CHECKS } from "./chain-audit-checks";
import type { PacketRead } from "./chain-audit-slice";
import { checkFrozenTurns, parsePacket } from "./chain-audit-slice";
import type { ChainAnchor, StoredEvent } from "./events";
import { hashCanonical } from "./hash";
import { verifyAnchor } from "./resolver";
import { LogIndex } from "./turn-pages";

export type { AuditPlan, AuditRun, CheckName } from "./chain-audit-link";
export { CHECK_NAMES, parseBoundaryBody } from "./chain-audit-link";
export type { PacketRead } from "./chain-audit-slice";
export { frozenSliceRange, frozenSliceRanges } from "./chain-audit-slice";

/**
 * The operator's audit of one agent's boundary chain in one conversation: a pure function of what
 * storage holds (boundary rows, plan rows, the packets read back from R2, the log). It re-derives
 * every claim a boundary makes instead of trusting the code that wrote it, so it also catches rows
 * forced into storage by hand and engine bugs, not only tampering.
 *
 * Every link gets every check (`chain-audit-checks.ts`, `chain-audit-slice.ts`), always in the same
 * order, so reports diff cleanly. A check that cannot run because what it needs is missing (an
 * unreadable packet, a body that is not a boundary) fails closed, with a detail that says it was not
 * checked rather than that it disagreed.
 *
 * The report never carries conversation text: details name fields, ids, hashes and sequence
 * numbers only. Boundaries are sensitive, and an audit must be shareable with whoever runs it.
 */

/** A boundary row as stored. `body` is the stored JSON, parsed but not yet validated. */
export interface AuditBoundary extends LinkRow {
  readonly createdAt: string;
}

export interface ChainAuditInput {
  readonly conversationId: string;
  readonly agentId: string;
  /** The epoch of the agent's current declaration: the only one the resolver may select from. */
  readonly currentEpochId: string;
  /** Every boundary of the agent in the conversation, every epoch, in any order. */
  readonly boundaries: readonly AuditBoundary[];
  /** Plan rows by run id. */
  readonly plans: ReadonlyMap<string, AuditPlan>;
  /** The packet read for each boundary, by boundary id (absent: nowhere to read it from). */
  readonly packets: ReadonlyMap<string, PacketRead>;
  readonly runs: readonly AuditRun[];
  /**
   * The conversation's log, at least through the largest `triggerSeq` of the packets. Each packet
   * is checked against the prefix that existed when it was planned, so later corrections (which
   * the resolver handles as amendments) never invalidate an old boundary.
   */
  readonly log: readonly StoredEvent[];
}

export interface AuditCheck {
  readonly name: CheckName;
  readonly ok: boolean;
  readonly detail?: string;
}

export interface LinkAudit {
  readonly boundaryId: string;
  readonly position: number;
  readonly epochId: string;
  readonly current: boolean;
  readonly valid: boolean;
  readonly checks: readonly AuditCheck[];
}

/**
 * The epoch's head judged against the log: the newest completed run that anchored a boundary of
 * the epoch names the boundary that must be the newest stored one, with its hash and content hash.
 * A head row deleted or rewritten behind the service's back leaves every remaining link valid, so
 * this is the check that catches it. `boundaryId`/`position`: what the log names (null: nothing
 * anchored yet).
 */
export interface AnchorAudit {
  readonly ok: boolean;
  readonly boundaryId: string | null;
  readonly position: number | null;
  readonly detail?: string;
}

export interface EpochAudit {
  readonly epochId: string;
  readonly current: boolean;
  /** Every link passes every check and the head is the one the log anchors. */
  readonly valid: boolean;
  readonly anchor: AnchorAudit;
  readonly links: readonly LinkAudit[];
}

export interface ChainAuditReport {
  readonly conversationId: string;
  readonly agentId: string;
  readonly currentEpochId: string;
  /** Every link of every epoch passes every check. */
  readonly valid: boolean;
  /** The current epoch first (listed even with no boundary yet), then retired ones, newest first. */
  readonly epochs: readonly EpochAudit[];
}

/**
 * Which R2 object to read for a boundary. The plan's key and hash first: the queued job named them,
 * so that packet is what the compactor actually read. Without a plan, the boundary's own claim is
 * read so the packet checks can still say something (the `plan` and `packet_hash` checks fail).
 */
export function packetLocation(boundary: AuditBoundary, plan: AuditPlan | undefined): { key: string; hash: string } | undefined {
  if (plan !== undefined) return { key: plan.packetKey, hash: plan.packetHash };
  const body = parseBoundaryBody(boundary.body);
  return body === undefined ? undefined : { key: body.packet.key, hash: body.packet.hash };
}

function auditLink(input: ChainAuditInput, logIndex: LogIndex, row: AuditBoundary, epoch: readonly AuditBoundary[]): LinkAudit {
  const packetRead = input.packets.get(row.id);
  const facts: LinkFacts = {
    conversationId: input.conversationId,
    agentId: input.agentId,
    row,
    body: parseBoundaryBody(row.body),
    previous: row.previousId === "" ? undefined : epoch.find((b) => b !== row && b.id === row.previousId),
    rivals: epoch.filter((b) => b !== row),
    plan: input.plans.get(row.runId),
    packetSource: packetRead,
    packet: parsePacket(packetRead),
    receipts: input.runs,
  };
  const checks = CHECK_NAMES.map((name): AuditCheck => {
    const findings = name === "frozen_turns_match_log" ? checkFrozenTurns(facts, logIndex) : LINK_CHECKS[name](facts);
    return findings.length === 0 ? { name, ok: true } : { name, ok: false, detail: findings.map((f) => f.detail).join("; ") };
  });
  const current = row.epochId === input.currentEpochId;
  return { boundaryId: row.id, position: row.position, epochId: row.epochId, current, valid: checks.every((c) => c.ok), checks };
}

/** The log's newest anchor of an epoch among the receipts given (the position is unique per epoch: migration 0011). */
export function newestAnchor(runs: readonly AuditRun[], epochId: string): ChainAnchor | undefined {
  let newest: ChainAnchor | undefined;
  for (const run of runs) {
    if (run.status !== "completed" || run.anchor === null || run.anchor.epochId !== epochId) continue;
    if (newest === undefined || run.anchor.position > newest.position) newest = run.anchor;
  }
  return newest;
}

/** The epoch's head against its newest anchor: the same check the resolver makes on every context call. */
function auditAnchor(input: ChainAuditInput, epochId: string, epoch: readonly AuditBoundary[]): AnchorAudit {
  const anchor = newestAnchor(input.runs, epochId);
  const newest = [...epoch].sort(byPosition).at(-1);
  const content = newest === undefined ? undefined : parseBoundaryBody(newest.body)?.content;
  const verdict = verifyAnchor(
    anchor,
    newest === undefined ? undefined : { id: newest.id, epochId: newest.epochId, position: newest.position, hash: newest.hash, contentHash: content === undefined ? undefined : hashCanonical(content) },
  );
  const named = { boundaryId: anchor?.boundaryId ?? null, position: anchor?.position ?? null };
  return verdict.ok ? { ok: true, ...named } : { ok: false, ...named, detail: verdict.error.message };
}

const byPosition = (a: AuditBoundary, b: AuditBoundary): number =>
  a.position - b.position || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);

/** A page of one epoch's links (`verifyLinks`): those with `after < position <= through`. */
export interface LinkPage {
  readonly conversationId: string;
  readonly agentId: string;
  readonly currentEpochId: string;
  readonly epochId: string;
  readonly current: boolean;
  /** Every link of this page passes every check and the epoch's head is anchored (a chain is valid when every page of every epoch is). */
  readonly valid: boolean;
  /** The epoch's head against the log, the same on every page. */
  readonly anchor: AnchorAudit;
  readonly links: readonly LinkAudit[];
  /** The position to pass as `after` for the next page; null after the epoch's last link. */
  readonly nextAfter: number | null;
}

/**
 * The links of one epoch with `after < position <= through`, each exactly as `auditChain` would
 * report it, given an input that holds (besides them) every boundary of the epoch that can bear
 * on them — their predecessors and any row sharing a predecessor or a position — the plans and
 * packets of the page's runs, their completed-run receipts, and the log over
 * `frozenSliceRanges(packets)` with the events related to it; and for the epoch's anchor, its
 * newest stored row and the log's newest anchored receipt of the epoch.
 */
export function auditLinkPage(input: ChainAuditInput, epochId: string, after: number, through: number, nextAfter: number | null): LinkPage {
  const logIndex = new LogIndex(input.log);
  const epoch = input.boundaries.filter((b) => b.epochId === epochId);
  const links = epoch
    .filter((b) => b.position > after && b.position <= through)
    .sort(byPosition)
    .map((row) => auditLink(input, logIndex, row, epoch));
  const anchor = auditAnchor(input, epochId, epoch);
  return {
    conversationId: input.conversationId,
    agentId: input.agentId,
    currentEpochId: input.currentEpochId,
    epochId,
    current: epochId === input.currentEpochId,
    valid: anchor.ok && links.every((l) => l.valid),
    anchor,
    links,
    nextAfter,
  };
}

export function auditChain(input: ChainAuditInput): ChainAuditReport {
  const logIndex = new LogIndex(input.log);
  const byEpoch = new Map<string, AuditBoundary[]>([[input.currentEpochId, []]]);
  for (const boundary of input.boundaries) {
    const list = byEpoch.get(boundary.epochId) ?? [];
    list.push(boundary);
    byEpoch.set(boundary.epochId, list);
  }
  const newest = (list: readonly AuditBoundary[]): string => list.reduce((max, b) => (b.createdAt > max ? b.createdAt : max), "");
  const retired = [...byEpoch.entries()]
    .filter(([epochId]) => epochId !== input.currentEpochId)
    .sort(([a, la], [b, lb]) => newest(lb).localeCompare(newest(la)) || a.localeCompare(b));
  const epochs = [[input.currentEpochId, byEpoch.get(input.currentEpochId) ?? []] as const, ...retired].map(([epochId, list]): EpochAudit => {
    const links = [...list].sort(byPosition).map((row) => auditLink(input, logIndex, row, list));
    const anchor = auditAnchor(input, epochId, list);
    return { epochId, current: epochId === input.currentEpochId, valid: anchor.ok && links.every((l) => l.valid), anchor, links };
  });
  return {
    conversationId: input.conversationId,
    agentId: input.agentId,
    currentEpochId: input.currentEpochId,
    valid: epochs.every((e) => e.valid),
    epochs,
  };
}
