import type { BoundaryBody } from "./boundary";
import { boundaryBodySchema, buildBoundary } from "./boundary";
import type { ChainAnchor, StoredEvent } from "./events";
import { hashCanonical } from "./hash";
import type { Packet } from "./packet";
import { LEGACY_PACKET_FORMAT, packetSchema } from "./packet";
import { renderLegacySliceLine, renderSliceLine } from "./render";
import { verifyAnchor } from "./resolver";
import { LogIndex, turnsAsOf } from "./turn-pages";

/**
 * The operator's audit of one agent's boundary chain in one conversation: a pure function of what
 * storage holds (boundary rows, plan rows, the packets read back from R2, the log). It re-derives
 * every claim a boundary makes instead of trusting the code that wrote it, so it also catches rows
 * forced into storage by hand and engine bugs, not only tampering.
 *
 * Every link gets every check, always in the same order, so reports diff cleanly. A check that
 * cannot run because what it needs is missing (an unreadable packet, a body that is not a boundary)
 * fails closed, with a detail that says it was not checked rather than that it disagreed.
 *
 * The report never carries conversation text: details name fields, ids, hashes and sequence
 * numbers only. Boundaries are sensitive, and an audit must be shareable with whoever runs it.
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

/** A boundary row as stored. `body` is the stored JSON, parsed but not yet validated. */
export interface AuditBoundary {
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
  readonly createdAt: string;
  /** The body column parsed as JSON; `undefined` when it is not JSON at all. */
  readonly body: unknown;
}

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

/** Where a boundary's packet was read from, and what came back (the reader re-hashes; see `packetLocation`). */
export interface PacketRead {
  readonly key: string;
  /** The SHA-256 the read was verified against. */
  readonly hash: string;
  readonly outcome: { readonly ok: true; readonly text: string } | { readonly ok: false; readonly reason: string };
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

/** The stored body validated as a boundary event, or undefined when it is not one. */
export function parseBoundaryBody(body: unknown): BoundaryBody | undefined {
  const parsed = boundaryBodySchema.safeParse(body);
  return parsed.success ? parsed.data : undefined;
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

// ---------------------------------------------------------------------------------------------

type Outcome = { readonly ok: true } | { readonly ok: false; readonly detail: string };
const pass: Outcome = { ok: true };
const failWith = (problems: readonly string[]): Outcome => (problems.length === 0 ? pass : { ok: false, detail: problems.join("; ") });

/** Details stay bounded however broken a row is. */
const MAX_LISTED = 8;
const listed = (items: readonly string[]): string =>
  items.length <= MAX_LISTED ? items.join(", ") : `${items.slice(0, MAX_LISTED).join(", ")} and ${items.length - MAX_LISTED} more`;

/** Leaf paths where two JSON values differ (names only: the values may be conversation text). */
function differingPaths(a: unknown, b: unknown, path = ""): string[] {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return [`${path || "(root)"} (length)`];
    return a.flatMap((item: unknown, i) => differingPaths(item, b[i], `${path}[${i}]`));
  }
  if (isRecord(a) && isRecord(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((key) => differingPaths(a[key], b[key], path === "" ? key : `${path}.${key}`));
  }
  return Object.is(a, b) ? [] : [path || "(root)"];
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** Groups a packet's slice may take: after the previous boundary's coverage, or from the frontier. */
const sliceStartsAfter = (packet: Packet): number => Math.max(packet.frontier.startSeq - 1, packet.previousBoundary?.coveredThroughSeq ?? 0);

interface LinkContext {
  readonly input: ChainAuditInput;
  /** The log indexed once per audit, so each link's slice is checked from its own range. */
  readonly logIndex: LogIndex;
  readonly row: AuditBoundary;
  readonly body: BoundaryBody | undefined;
  /** Other boundaries of the same epoch. */
  readonly siblings: readonly AuditBoundary[];
  readonly plan: AuditPlan | undefined;
  readonly packetRead: PacketRead | undefined;
  readonly packet: { ok: true; packet: Packet } | { ok: false; detail: string };
}

const NOT_A_BOUNDARY = "not checked: the stored body is not a boundary event";

function checkBodyHash({ row, body }: LinkContext): Outcome {
  if (row.body === undefined) return { ok: false, detail: "the stored body is not JSON" };
  if (body === undefined) return { ok: false, detail: "the stored body does not match the boundary event schema" };
  const problems: string[] = [];
  // Over the stored JSON itself, not the parse: a schema default or transform added later must not
  // make a stored body hash differently from what was written. (The strict schema already refused
  // any key outside the contract, so nothing unhashed can hide in the row.)
  if (hashCanonical(row.body) !== row.hash) problems.push("hashCanonical(body) differs from the stored hash");
  if (body.id !== row.id) problems.push(`body.id ${body.id} is not the row id`);
  if (body.position !== row.position) problems.push(`body.position ${body.position} is not the row position ${row.position}`);
  if (body.run.id !== row.runId) problems.push(`body.run.id ${body.run.id} is not the row run id ${row.runId}`);
  if (body.coveredThrough.seq !== row.coveredThroughSeq) {
    problems.push(`body.coveredThrough.seq ${body.coveredThrough.seq} is not the row's ${row.coveredThroughSeq}`);
  }
  if (body.compactor.epochId !== row.epochId) problems.push("body.compactor.epochId is not the row epoch");
  if ((body.previous?.id ?? "") !== row.previousId) problems.push("body.previous.id is not the row previous_id");
  if ((body.previous?.hash ?? null) !== row.previousHash) problems.push("body.previous.hash is not the row previous_hash");
  return failWith(problems);
}

function predecessorOf({ row, siblings }: LinkContext): AuditBoundary | undefined {
  return row.previousId === "" ? undefined : siblings.find((b) => b.id === row.previousId);
}

function checkLink(ctx: LinkContext): Outcome {
  const { row, body } = ctx;
  if (body === undefined) return { ok: false, detail: NOT_A_BOUNDARY };
  if (row.position === 1) {
    const problems: string[] = [];
    if (body.previous !== null) problems.push("the first boundary of an epoch names a previous boundary");
    if (row.previousId !== "") problems.push("the first boundary of an epoch has a previous_id");
    return failWith(problems);
  }
  if (body.previous === null || row.previousId === "") return { ok: false, detail: `position ${row.position} has no previous boundary` };
  if (body.previous.id !== row.previousId) return { ok: false, detail: "body.previous.id is not the row previous_id" };
  const previous = predecessorOf(ctx);
  if (previous === undefined) return { ok: false, detail: `previous boundary ${row.previousId} is missing from epoch ${row.epochId}` };
  const problems: string[] = [];
  if (previous.hash !== body.previous.hash) problems.push(`previous boundary ${previous.id} is stored with hash ${previous.hash}, this link names ${body.previous.hash}`);
  if (previous.position !== row.position - 1) problems.push(`previous boundary ${previous.id} is at position ${previous.position}, not ${row.position - 1}`);
  if (previous.coveredThroughSeq !== body.previous.coveredThroughSeq) {
    problems.push(`previous boundary ${previous.id} covers through ${previous.coveredThroughSeq}, this link says ${body.previous.coveredThroughSeq}`);
  }
  return failWith(problems);
}

function checkCoverage(ctx: LinkContext): Outcome {
  const { body } = ctx;
  if (body === undefined) return { ok: false, detail: NOT_A_BOUNDARY };
  const seq = body.coveredThrough.seq;
  if (body.previous === null) {
    // The first boundary begins at its activation frontier: it cannot cover only older history.
    const problems = seq >= body.frontier.startSeq ? [] : [`covers through ${seq}, before its frontier starts at ${body.frontier.startSeq}`];
    return failWith([...problems, ...sliceOverlap(ctx)]);
  }
  const problems: string[] = [];
  if (seq <= body.previous.coveredThroughSeq) problems.push(`covers through ${seq}, not past the ${body.previous.coveredThroughSeq} it names for its previous boundary`);
  // Judged against the stored predecessor too (when it exists): the link check reports a missing one.
  const previous = predecessorOf(ctx);
  if (previous !== undefined && seq <= previous.coveredThroughSeq) problems.push(`covers through ${seq}, not past previous boundary ${previous.id} (${previous.coveredThroughSeq})`);
  problems.push(...sliceOverlap(ctx));
  return failWith(problems);
}

/**
 * A slice must not re-freeze groups the previous boundary already covers (they would be summarized
 * twice). Judged only when the packet is readable; `packet_hash` reports when it is not.
 */
function sliceOverlap({ packet: read }: LinkContext): string[] {
  if (!read.ok) return [];
  const after = sliceStartsAfter(read.packet);
  const early = read.packet.frozen.turns.filter((t) => t.group <= after).map((t) => t.id);
  return early.length === 0 ? [] : [`the frozen slice re-freezes turns at or before ${after}: ${listed(early)}`];
}

function checkNoFork({ row, siblings }: LinkContext): Outcome {
  const problems: string[] = [];
  const samePredecessor = siblings.filter((b) => b.previousId === row.previousId).map((b) => b.id);
  const samePosition = siblings.filter((b) => b.position === row.position).map((b) => b.id);
  if (samePredecessor.length > 0) {
    const what = row.previousId === "" ? "also start the epoch" : `also follow ${row.previousId}`;
    problems.push(`${listed(samePredecessor)} ${what}`);
  }
  if (samePosition.length > 0) problems.push(`${listed(samePosition)} also hold position ${row.position}`);
  return failWith(problems);
}

function checkPlan({ input, row, body, plan }: LinkContext): Outcome {
  if (plan === undefined) return { ok: false, detail: `no plan for run ${row.runId}: the run was never planned by the parent` };
  const problems: string[] = [];
  if (plan.conversationId !== input.conversationId) problems.push("the plan belongs to another conversation");
  if (plan.agentId !== input.agentId) problems.push("the plan belongs to another agent");
  if (plan.epochId !== row.epochId) problems.push("the plan belongs to another epoch");
  if (plan.previousBoundaryId !== row.previousId) problems.push(`the plan follows ${plan.previousBoundaryId || "(none)"}, the boundary follows ${row.previousId || "(none)"}`);
  if (body === undefined) {
    problems.push(NOT_A_BOUNDARY);
  } else {
    if (plan.packetKey !== body.packet.key) problems.push(`the plan's packet is ${plan.packetKey}, the boundary names ${body.packet.key}`);
    if (plan.packetHash !== body.packet.hash) problems.push("the plan's packet hash is not the boundary's");
    if (plan.triggerSeq !== body.run.triggerSeq) problems.push(`the plan was triggered at ${plan.triggerSeq}, the boundary says ${body.run.triggerSeq}`);
    if (plan.throughSeq !== body.coveredThrough.seq) problems.push(`the plan froze through ${plan.throughSeq}, the boundary covers through ${body.coveredThrough.seq}`);
  }
  return failWith(problems);
}

function checkPacketHash({ row, plan, packetRead }: LinkContext): Outcome {
  if (packetRead === undefined) return { ok: false, detail: "no packet location: neither a plan nor a readable boundary body names one" };
  if (!packetRead.outcome.ok) return { ok: false, detail: `packet ${packetRead.key}: ${packetRead.outcome.reason}` };
  if (plan === undefined) return { ok: false, detail: `no plan for run ${row.runId} to verify the packet against` };
  if (packetRead.key !== plan.packetKey || packetRead.hash !== plan.packetHash) return { ok: false, detail: "the packet read is not the one the plan names" };
  return pass;
}

function parsePacket(read: PacketRead | undefined): LinkContext["packet"] {
  if (read === undefined) return { ok: false, detail: "not checked: no packet location" };
  if (!read.outcome.ok) return { ok: false, detail: `not checked: the packet could not be read (${read.outcome.reason})` };
  let json: unknown;
  try {
    json = JSON.parse(read.outcome.text);
  } catch {
    return { ok: false, detail: "the packet is not JSON" };
  }
  const parsed = packetSchema.safeParse(json);
  return parsed.success ? { ok: true, packet: parsed.data } : { ok: false, detail: "the packet does not match the packet schema" };
}

function checkPacketBinding({ input, body, packet: read }: LinkContext): Outcome {
  if (!read.ok) return { ok: false, detail: read.detail };
  if (body === undefined) return { ok: false, detail: NOT_A_BOUNDARY };
  const { packet } = read;
  const problems: string[] = [];
  if (packet.conversationId !== input.conversationId) problems.push("the packet belongs to another conversation");
  if (packet.agentId !== input.agentId) problems.push("the packet belongs to another agent");
  // The parent derives every field but the model's content from the packet (`buildBoundary`), so
  // rebuilding from this packet with the stored content and receipt must give the stored body
  // exactly. This covers run, epoch, prompt, frontier, previous link, coverage, sizes and input
  // hashes at once, and anything added to the binding later.
  const rebuilt = buildBoundary({
    id: body.id,
    position: body.position,
    packet,
    packetKey: body.packet.key,
    packetHash: body.packet.hash,
    content: body.content,
    model: body.model,
    createdAt: body.createdAt,
  }).body;
  const differing = differingPaths(rebuilt, body);
  if (differing.length > 0) problems.push(`the boundary disagrees with its packet on ${listed(differing)}`);
  // The packet's own summary hashes are believed by the rebuild; recompute them from its turns.
  const { frozen } = packet;
  if (hashCanonical(frozen.turns.map((t) => t.id)) !== body.input.turnIdsHash) problems.push("input.turnIdsHash is not the hash of the frozen turn ids");
  if (hashCanonical(frozen.turns.map((t) => t.rendered)) !== body.input.renderedHash) problems.push("input.renderedHash is not the hash of the frozen rendered lines");
  if (frozen.turns.at(-1)?.id !== frozen.throughTurnId) problems.push("frozen.throughTurnId is not the last frozen turn");
  return failWith(problems);
}

/**
 * The range of the log a packet's frozen slice is checked against: the groups after the slice's
 * start (or after the oldest group the slice claims, if it claims an older one: re-freezing is
 * `coverage_advances`' finding, not an invention), as the log stood at the trigger.
 */
function frozenSliceRange(packet: Packet): { after: number; through: number } {
  return { after: Math.min(sliceStartsAfter(packet), ...packet.frozen.turns.map((t) => t.group - 1)), through: packet.triggerSeq };
}

/**
 * The ranges of the log (`after < seq <= through`) whose events, with the events related to them
 * (`readRelatedEvents` with replies, as `LogIndex.related` mirrors it), the frozen-slice check of
 * these packets reads: an audit of some links needs only these, not the whole log. Unreadable
 * packets need none (their check fails without the log). Overlapping ranges are merged.
 */
export function frozenSliceRanges(reads: Iterable<PacketRead>): { after: number; through: number }[] {
  const ranges = [...reads]
    .map(parsePacket)
    .flatMap((read) => (read.ok ? [frozenSliceRange(read.packet)] : []))
    .filter((range) => range.through > range.after)
    .sort((a, b) => a.after - b.after);
  const merged: { after: number; through: number }[] = [];
  for (const range of ranges) {
    const last = merged.at(-1);
    if (last !== undefined && range.after <= last.through) last.through = Math.max(last.through, range.through);
    else merged.push({ ...range });
  }
  return merged;
}

function checkFrozenTurns({ logIndex, packet: read }: LinkContext): Outcome {
  if (!read.ok) return { ok: false, detail: read.detail };
  const { packet } = read;
  const after = sliceStartsAfter(packet);
  // The log's turns as they stood at the trigger: exactly the whole prefix's fold for those
  // groups (core/turn-pages), read from that range of the log rather than by folding the whole
  // prefix for every link.
  const { after: from } = frozenSliceRange(packet);
  const asPlanned = turnsAsOf(logIndex, { admittedAgents: new Set(packet.historyAgents), includeSensitive: packet.admitSensitive }, from, packet.triggerSeq);
  const indexById = new Map<string, number>(asPlanned.map((t, i) => [t.id, i]));
  const problems: string[] = [];
  const invented = packet.frozen.turns.filter((t) => !indexById.has(t.id)).map((t) => t.id);
  if (invented.length > 0) problems.push(`frozen turns the log did not hold at seq ${packet.triggerSeq}: ${listed(invented)}`);
  // Silent truncation is forbidden: every turn of the groups the slice claims must be in it.
  // (Which groups it may claim at all is `coverage_advances`' question.)
  const frozenIds = new Set(packet.frozen.turns.map((t) => t.id));
  const dropped = asPlanned.filter((t) => t.group > after && t.group <= packet.frozen.throughSeq && !frozenIds.has(t.id)).map((t) => t.id);
  if (dropped.length > 0) problems.push(`log turns missing from the frozen slice: ${listed(dropped)}`);
  const mismatched: string[] = [];
  let lastIndex = -1;
  let ordered = true;
  for (const turn of packet.frozen.turns) {
    const index = indexById.get(turn.id);
    const logged = index === undefined ? undefined : asPlanned[index];
    if (index === undefined || logged === undefined) continue;
    if (index < lastIndex) ordered = false;
    lastIndex = index;
    const fields = [
      turn.text !== logged.text ? "text" : undefined,
      turn.hash !== logged.hash ? "hash" : undefined,
      turn.role !== logged.role ? "role" : undefined,
      turn.group !== logged.group ? "group" : undefined,
      hashCanonical(turn.author) !== hashCanonical(logged.author) ? "author" : undefined,
      // The compactor read the rendered line, not `text`: it must be the log's turn too.
      turn.rendered !== (packet.format === LEGACY_PACKET_FORMAT ? renderLegacySliceLine(logged) : renderSliceLine(logged)) ? "rendered" : undefined,
      turn.messageId !== undefined && turn.messageId !== logged.messageId ? "messageId" : undefined,
    ].filter((f) => f !== undefined);
    if (fields.length > 0) mismatched.push(`${turn.id} (${fields.join(", ")})`);
  }
  if (mismatched.length > 0) problems.push(`frozen turns differ from the log as of seq ${packet.triggerSeq}: ${listed(mismatched)}`);
  if (!ordered) problems.push("frozen turns are not in the log's order");
  return failWith(problems);
}

function checkCompletedRun({ input, row, body }: LinkContext): Outcome {
  if (body === undefined) return { ok: false, detail: NOT_A_BOUNDARY };
  const completed = input.runs.filter((r) => r.runId === row.runId && r.status === "completed");
  if (completed.length === 0) return { ok: false, detail: `no completed run event for ${row.runId}` };
  const receipt = completed.find((r) => r.agentId === body.compactorId);
  if (receipt === undefined) return { ok: false, detail: `run ${row.runId} was completed by ${listed(completed.map((r) => r.agentId))}, not the compactor ${body.compactorId}` };
  if (receipt.boundaryId !== null && receipt.boundaryId !== row.id) return { ok: false, detail: `the completed run names boundary ${receipt.boundaryId}` };
  const { anchor } = receipt;
  if (anchor === null) return pass;
  const problems: string[] = [];
  if (anchor.boundaryId !== row.id) problems.push(`the completed run anchors boundary ${anchor.boundaryId}`);
  if (anchor.epochId !== row.epochId) problems.push("the completed run anchors another epoch");
  if (anchor.position !== row.position) problems.push(`the completed run anchors position ${anchor.position}, the row is at ${row.position}`);
  // A body edited under its old hash is body_hash's finding; a rewritten row with a recomputed
  // hash is this one's, and the content hash says whether the summary itself was rewritten.
  if (anchor.boundaryHash !== row.hash) {
    const content = anchor.contentHash === hashCanonical(body.content) ? "its content hash matches" : "its content hash differs too";
    problems.push(`the row's hash is not the hash its completed run settled (${content})`);
  }
  return failWith(problems);
}

function checkModelEvidence({ body }: LinkContext): Outcome {
  if (body === undefined) return { ok: false, detail: NOT_A_BOUNDARY };
  const { model } = body;
  const problems: string[] = [];
  if (model.provider.trim() === "") problems.push("no provider");
  if (model.model.trim() === "") problems.push("no model");
  // A language model's receipt must account for its tokens; the offline compactor has none to report.
  if (model.provider === "openai-compatible" && model.usage === null) problems.push("an openai-compatible receipt without usage");
  return failWith(problems);
}

const CHECKS: Record<CheckName, (ctx: LinkContext) => Outcome> = {
  body_hash: checkBodyHash,
  link: checkLink,
  coverage_advances: checkCoverage,
  no_fork: checkNoFork,
  plan: checkPlan,
  packet_hash: checkPacketHash,
  packet_binding: checkPacketBinding,
  frozen_turns_match_log: checkFrozenTurns,
  completed_run: checkCompletedRun,
  model_evidence: checkModelEvidence,
};

function auditLink(input: ChainAuditInput, logIndex: LogIndex, row: AuditBoundary, epoch: readonly AuditBoundary[]): LinkAudit {
  const packetRead = input.packets.get(row.id);
  const ctx: LinkContext = {
    input,
    logIndex,
    row,
    body: parseBoundaryBody(row.body),
    siblings: epoch.filter((b) => b !== row),
    plan: input.plans.get(row.runId),
    packetRead,
    packet: parsePacket(packetRead),
  };
  const checks = CHECK_NAMES.map((name): AuditCheck => {
    const outcome = CHECKS[name](ctx);
    return outcome.ok ? { name, ok: true } : { name, ok: false, detail: outcome.detail };
  });
  const current = row.epochId === input.currentEpochId;
  return { boundaryId: row.id, position: row.position, epochId: row.epochId, current, valid: checks.every((c) => c.ok), checks };
}

/** The log's newest anchor of an epoch among the receipts given (the position is unique per epoch: migration 0011). */
function newestAnchor(runs: readonly AuditRun[], epochId: string): ChainAnchor | undefined {
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
