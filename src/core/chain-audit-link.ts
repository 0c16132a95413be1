import type { BoundaryBody } from "./boundary";
import { boundaryBodySchema } from "./boundary";
import type { ChainAnchor, RunBody } from "./events";
import type { Packet } from "./packet";

/**
 * What one boundary link is checked on, and what a check finds. A link's checks read its row, the
 * row it names as its predecessor, the rows that compete with it, its plan, its packet and its
 * receipts; the chain audit gathers these for every link (`chain-audit.ts`), the resolver for the
 * head on every context call (`resolver.ts`), and both run the same check functions on them
 * (`chain-audit-checks.ts`).
 *
 * A finding names the field it read, what the field should have held and what it held, and the
 * sentence the audit reports. Never conversation text: fields, ids, hashes and sequence numbers only.
 */

export const CHECK_NAMES = [
  "body_hash",
  "link",
  "coverage_advances",
  "no_fork",
  "plan",
  "packet_hash",
  "packet_binding",
  "frozen_turns_match_log",
  "completed_run",
  "model_evidence",
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

/** The checks that need no re-read of the log (every check but the frozen slice's). */
export type LinkCheckName = Exclude<CheckName, "frozen_turns_match_log">;

type Scalar = string | number | boolean | null;

export interface Finding {
  readonly field: string;
  readonly expected: Scalar;
  readonly found: Scalar;
  readonly detail: string;
}

export const finding = (field: string, expected: Scalar, found: Scalar, detail: string): Finding => ({ field, expected, found, detail });

/** One finding when `found` is not `expected`, none when it is. */
export const differs = (field: string, expected: Scalar, found: Scalar, detail: string): Finding[] => (Object.is(expected, found) ? [] : [finding(field, expected, found, detail)]);

/** Details stay bounded however broken a row is. */
const MAX_LISTED = 8;
export const listed = (items: readonly string[]): string =>
  items.length <= MAX_LISTED ? items.join(", ") : `${items.slice(0, MAX_LISTED).join(", ")} and ${items.length - MAX_LISTED} more`;

/** A boundary row as stored. `body` is the stored JSON, parsed but not yet validated. */
export interface LinkRow {
  readonly id: string;
  readonly epochId: string;
  readonly position: number;
  /** `''` for the first boundary of an epoch (the column is NOT NULL so uniqueness covers it). */
  readonly previousId: string;
  readonly previousHash: string | null;
  readonly coveredThroughSeq: number;
  readonly runId: string;
  /** The hash column: what the writer claimed `hashCanonical(body)` was. */
  readonly hash: string;
  /** The body column parsed as JSON; `undefined` when it is not JSON at all. */
  readonly body: unknown;
}

/** Another row of the link's epoch, as far as a fork is concerned. */
export type RivalRow = Pick<LinkRow, "id" | "previousId" | "position">;

/** A `compaction_plans` row: what the parent froze and queued before any model ran. */
export interface AuditPlan {
  readonly runId: string;
  readonly conversationId: string;
  readonly agentId: string;
  readonly epochId: string;
  readonly previousBoundaryId: string;
  readonly packetKey: string;
  readonly packetHash: string;
  readonly triggerSeq: number;
  readonly throughSeq: number;
}

/** A `run` event of the conversation, reduced to what binds it to a boundary. */
export interface AuditRun {
  readonly runId: string;
  readonly status: string;
  readonly agentId: string;
  /** `detail.boundaryId` of the receipt, when it names one. */
  readonly boundaryId: string | null;
  /** What the run settled, bound into the log (completed compactor runs; null before runs carried it). */
  readonly anchor: ChainAnchor | null;
}

export function auditRunOf(run: RunBody): AuditRun {
  const boundaryId = run.detail?.["boundaryId"];
  return { runId: run.runId, status: run.status, agentId: run.agentId, boundaryId: typeof boundaryId === "string" ? boundaryId : null, anchor: run.anchor ?? null };
}

/** Where a link's packet was read from (its plan's key and hash, which the reader re-hashed against), and whether it was. */
export interface PacketSource {
  readonly key: string;
  readonly hash: string;
  readonly outcome: { readonly ok: true } | { readonly ok: false; readonly reason: string };
}

export type ParsedPacket = { readonly ok: true; readonly packet: Packet } | { readonly ok: false; readonly detail: string };

export interface LinkFacts {
  readonly conversationId: string;
  readonly agentId: string;
  readonly row: LinkRow;
  /** `row.body` validated as a boundary event; undefined when it is not one. */
  readonly body: BoundaryBody | undefined;
  /** The stored row `row.previousId` names (undefined: none named, or none stored). */
  readonly previous: LinkRow | undefined;
  /** Other rows of the epoch: at least every one that shares the link's predecessor or position. */
  readonly rivals: readonly RivalRow[];
  readonly plan: AuditPlan | undefined;
  readonly packetSource: PacketSource | undefined;
  readonly packet: ParsedPacket;
  /** Run events of the conversation: at least every one of `row.runId`. */
  readonly receipts: readonly AuditRun[];
}

/** The stored body validated as a boundary event, or undefined when it is not one. */
export function parseBoundaryBody(body: unknown): BoundaryBody | undefined {
  const parsed = boundaryBodySchema.safeParse(body);
  return parsed.success ? parsed.data : undefined;
}

/** The link's predecessor: the stored row of its epoch that its row names. */
export function predecessorOf({ row, previous }: LinkFacts): LinkRow | undefined {
  return row.previousId !== "" && previous?.id === row.previousId && previous.epochId === row.epochId ? previous : undefined;
}

/** Groups a packet's slice may take: after the previous boundary's coverage, or from the frontier. */
export const sliceStartsAfter = (packet: Packet): number => Math.max(packet.frontier.startSeq - 1, packet.previousBoundary?.coveredThroughSeq ?? 0);

const NOT_A_BOUNDARY = "not checked: the stored body is not a boundary event";
export const notABoundary = (): Finding[] => [finding("body", "a boundary event", null, NOT_A_BOUNDARY)];
