import type { AuditBoundary, AuditRun, LinkPage, PacketRead } from "../core/chain-audit";
import { NOT_SERVING_MESSAGE } from "../core/agent-access";
import { auditChain, auditLinkPage, frozenSliceRanges, packetLocation, parseBoundaryBody } from "../core/chain-audit";
import type { ChainAnchor, StoredEvent } from "../core/events";
import { auditRunOf } from "../core/chain-audit-link";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import type { BoundaryAuditRow } from "../storage/shard/boundary-audit";
import type { PlanRecord } from "../storage/shard/plans";
import type { StoredDeclaration } from "../storage/control/declarations";
import { currentDeclaration } from "../storage/control/declarations";
import { scopesAllow } from "../core/conversation-id";
import { hasChainIn, readBoundaryAuditPage, readBoundaryAuditRows, readBoundaryListPage, readChainSize } from "../storage/shard/boundary-audit";
import { readChainTrouble } from "../storage/shard/incidents";
import { readPlansByRunIds } from "../storage/shard/plans";
import { conversationStub } from "../durable/stub";
import type { Wire } from "./responses";
import type { chainHealthSchema } from "./responses-chain";
import { readChainAnchor, readSliceLog } from "../storage/shard/context-reads";
import { readDocument } from "../storage/r2/documents";
import { readAllEvents, readEventsByKeys, readHead, readLogGaps } from "../storage/shard/events";
import type { LogAudit, LogRange } from "../core/log-audit";
import { auditLog, auditLogRange, pageLogRange, withLogAudit } from "../core/log-audit";
import { validate } from "./validation";
import type { ScopedConversationId } from "./access";
import { agentQuery, chainListQuery, linkPageQuery } from "./queries";
import { shardDatabaseOf } from "../storage/shards";

/**
 * The operator's view of an agent's boundary chain in one conversation: `listChain` lists every
 * boundary of every epoch as stored, `verifyChain` re-derives every link's claims
 * (`core/chain-audit`). Both are inspection operations, never on the append or selection path.
 *
 * Boundaries are sensitive derived claims: neither returns a summary. The listing carries the
 * bounded preview the contract derives for exactly this purpose; the audit carries none.
 */

/** A listed boundary. Identity, order and links come from the columns, so a row whose body is not a boundary still lists. */
function boundaryView(row: BoundaryAuditRow, currentEpochId: string) {
  const body = parseBoundaryBody(row.body);
  return {
    id: row.id,
    epochId: row.epochId,
    position: row.position,
    previous: row.previousId === "" ? null : { id: row.previousId, hash: row.previousHash },
    coveredThroughSeq: row.coveredThroughSeq,
    coveredThroughTurnId: body?.coveredThrough.turnId ?? null,
    runId: row.runId,
    hash: row.hash,
    createdAt: row.createdAt,
    model: body === undefined ? null : { provider: body.model.provider, model: body.model.model },
    preview: body?.content.preview ?? null,
    current: row.epochId === currentEpochId,
  };
}

export type ChainHealth = Wire<typeof chainHealthSchema>;

export interface ChainListing {
  readonly conversationId: string;
  readonly agentId: string;
  readonly currentEpochId: string;
  readonly boundaries: ReturnType<typeof boundaryView>[];
  /** The id to pass as `after` for the next page; null after the last. */
  readonly nextAfter: string | null;
  readonly health: ChainHealth | null;
}

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * The chain's liveness as its conversation's object holds it (the plan in flight and its deadlines
 * live there), with its failures from the incident rows. The object's read activates nothing.
 */
async function chainHealth(env: Env, conversationId: string, agentId: string, now: Date): Promise<ChainHealth | null> {
  const state = await conversationStub(env, conversationId).describeChain(conversationId, agentId);
  if (state === undefined) return null;
  const open = state.openPlan;
  const { lastFailure, failedAttempts } = await readChainTrouble(await shardDatabaseOf(env, conversationId), conversationId, agentId, open?.runId ?? null);
  return {
    activated: state.activated,
    headId: state.headId,
    openPlan:
      open === null
        ? null
        : {
            runId: open.runId,
            createdAt: open.createdAt,
            ageSeconds: Math.max(0, Math.floor((now.getTime() - Date.parse(open.createdAt)) / 1_000)),
            dispatches: open.dispatches,
            failedAttempts,
            nextWakeAt: isoOrNull(open.nextWakeAt),
          },
    replanAt: isoOrNull(state.replanAt),
    behindThroughSeq: state.behindThroughSeq,
    lastFailure,
  };
}

/**
 * The declaration of an agent whose chain in this conversation a token for it may read: one that
 * serves the conversation now, or has boundaries in it from when it did. Any other id, declared for
 * other conversations or by nobody, gets the one answer `NOT_SERVING_MESSAGE`: a conversation's
 * reader learns nothing of agents elsewhere, not even that their id is held (their epoch id would
 * fingerprint every re-declaration).
 */
async function chainAgent(env: Env, conversationId: ScopedConversationId, agentId: string): Promise<Result<StoredDeclaration>> {
  const declaration = await currentDeclaration(env.DB, agentId);
  if (declaration === undefined) return fail("not_found", NOT_SERVING_MESSAGE);
  if (scopesAllow(declaration.registration.agent.sources, conversationId)) return ok(declaration);
  return (await hasChainIn(await shardDatabaseOf(env, conversationId), conversationId, agentId)) ? ok(declaration) : fail("not_found", NOT_SERVING_MESSAGE);
}

/**
 * `{ agent, after?, limit? }`: a page of the agent's boundaries in this conversation, every epoch,
 * oldest first, after the boundary `after`, with `nextAfter` to pass for the next page; and the
 * chain's health.
 */
export async function listChain(env: Env, conversationId: ScopedConversationId, query: unknown): Promise<Result<ChainListing>> {
  const parsed = validate(chainListQuery, query);
  if (!parsed.ok) return parsed;
  const { agent: agentId, after, limit } = parsed.value;
  const chained = await chainAgent(env, conversationId, agentId);
  if (!chained.ok) return chained;
  const declaration = chained.value;
  const rows = await readBoundaryListPage(await shardDatabaseOf(env, conversationId), conversationId, agentId, after, limit);
  const listed = rows.slice(0, limit);
  const currentEpochId = declaration.epoch.id;
  const health = await chainHealth(env, conversationId, agentId, new Date());
  const nextAfter = rows.length > limit ? (listed.at(-1)?.id ?? null) : null;
  return ok({ conversationId, agentId, currentEpochId, boundaries: listed.map((row) => boundaryView(row, currentEpochId)), nextAfter, health });
}

export type ChainAudit = ReturnType<typeof auditChain> & { readonly log: LogAudit };

/** A page of links with the log's audit (`verifyLinks`). */
export type VerifiedLinkPage = LinkPage & { readonly log: LogAudit & { readonly range: LogRange } };

/**
 * The packet of each boundary, read back from R2 and re-hashed. One at a time: each read holds a
 * connection until its body is consumed, and a Worker has at most 6 open at once. An audit is not
 * latency-sensitive.
 */
async function readPackets(documents: R2Bucket, boundaries: readonly AuditBoundary[], plans: ReadonlyMap<string, PlanRecord>): Promise<Map<string, PacketRead>> {
  const packets = new Map<string, PacketRead>();
  for (const boundary of boundaries) {
    const location = packetLocation(boundary, plans.get(boundary.runId));
    if (location === undefined) continue;
    packets.set(boundary.id, { ...location, outcome: await readDocument(documents, location.key, location.hash) });
  }
  return packets;
}

const toAuditRun = (event: StoredEvent): AuditRun[] => (event.kind === "run" ? [auditRunOf(event.body)] : []);

/** The newest anchor as the receipt it came from, reduced to what the anchor check reads. */
const anchorRun = (anchor: ChainAnchor): AuditRun => ({ runId: `anchor:${anchor.boundaryId}`, status: "completed", agentId: "", boundaryId: anchor.boundaryId, anchor });

/**
 * The longest chain and log one `verify` call reads whole: past either, the call is refused and
 * says to verify page by page (`verifyLinks`), which costs a page's links whatever the length. The
 * whole log is held in memory and every packet read from R2, one subrequest each: 20,000 events
 * of a few hundred bytes, and 100 packets, stay well inside one invocation's memory and subrequests.
 */
export const VERIFY_WHOLE_MAX_EVENTS = 20_000;
export const VERIFY_WHOLE_MAX_BOUNDARIES = 100;

/** `{ agent }`: every link re-hashed from D1 events and R2 packets, each reported valid or with the checks it failed. */
export async function verifyChain(env: Env, conversationId: ScopedConversationId, query: unknown): Promise<Result<ChainAudit>> {
  const parsed = validate(agentQuery, query);
  if (!parsed.ok) return parsed;
  const agentId = parsed.value.agent;
  const chained = await chainAgent(env, conversationId, agentId);
  if (!chained.ok) return chained;
  const declaration = chained.value;

  const { DOCUMENTS } = env;
  const DB = await shardDatabaseOf(env, conversationId);
  // Boundaries are counted only up to one past the maximum: more than it is all the refusal needs to say.
  const size = await readChainSize(DB, conversationId, agentId, VERIFY_WHOLE_MAX_BOUNDARIES + 1);
  if (size.events > VERIFY_WHOLE_MAX_EVENTS || size.boundaries > VERIFY_WHOLE_MAX_BOUNDARIES) {
    const boundaries = size.boundaries > VERIFY_WHOLE_MAX_BOUNDARIES ? `more than ${VERIFY_WHOLE_MAX_BOUNDARIES}` : String(size.boundaries);
    return fail(
      "payload_too_large",
      `this chain is too long to verify in one call (${size.events} events, ${boundaries} boundaries; at most ${VERIFY_WHOLE_MAX_EVENTS} and ${VERIFY_WHOLE_MAX_BOUNDARIES}): verify it a page at a time with GET …/verify/links?agent=${agentId}, following nextAfter`,
      { events: size.events, boundaries: size.boundaries, maxEvents: VERIFY_WHOLE_MAX_EVENTS, maxBoundaries: VERIFY_WHOLE_MAX_BOUNDARIES, paged: "verifyLinks" },
    );
  }
  const boundaries = await readBoundaryAuditRows(DB, conversationId, agentId);
  const plans = await readPlansByRunIds(DB, [...new Set(boundaries.map((b) => b.runId))]);
  // A long chain is many subrequests, which bounds how long a chain one request can audit:
  // `verifyLinks` audits it a page at a time.
  const packets = await readPackets(DOCUMENTS, boundaries, plans);
  // The whole log, once: frozen turns are checked against the log as it stood at each run's
  // trigger, and receipts (run events) come after it. Acceptable for an audit, never for the hot path.
  const log = await readAllEvents(DB, conversationId);
  const runs = log.flatMap(toAuditRun);
  // The whole log is in hand: only the high-water mark is read besides it.
  const lastSeq = await readHead(DB, conversationId);
  const report = auditChain({ conversationId, agentId, currentEpochId: declaration.epoch.id, boundaries, plans, packets, runs, log });
  // The whole log besides the slices: a deleted tail turn, run receipt or newest event, or an event rewritten anywhere.
  return ok(withLogAudit(report, auditLog(lastSeq, log.map((event) => event.seq), log)));
}

/**
 * `{ agent, epoch?, after?, limit? }`: one page of an epoch's links (the current epoch unless
 * named), each audited exactly as `verifyChain` audits it, at the cost of the page alone: its
 * boundary rows and their neighbours, its plans and packets, its completed-run receipts by key,
 * and the ranges of the log its frozen slices were cut from (with the events related to them)
 * rather than the whole log. A long chain is verified by following `nextAfter`.
 */
export async function verifyLinks(env: Env, conversationId: ScopedConversationId, query: unknown): Promise<Result<VerifiedLinkPage>> {
  const parsed = validate(linkPageQuery, query);
  if (!parsed.ok) return parsed;
  const { agent: agentId, after, limit } = parsed.value;
  const chained = await chainAgent(env, conversationId, agentId);
  if (!chained.ok) return chained;
  const declaration = chained.value;
  const epochId = parsed.value.epoch ?? declaration.epoch.id;

  const { DOCUMENTS } = env;
  const DB = await shardDatabaseOf(env, conversationId);
  const page = await readBoundaryAuditPage(DB, conversationId, agentId, epochId, after, limit);
  const audited = page.rows.filter((row) => row.epochId === epochId && row.position > after && row.position <= page.through);
  const plans = await readPlansByRunIds(DB, [...new Set(audited.map((b) => b.runId))]);
  const packets = await readPackets(DOCUMENTS, audited, plans);
  // The receipt a settled run leaves is keyed by its run (the `run:` prefix is the engine's alone).
  const receipts = await readEventsByKeys(DB, conversationId, audited.map((b) => `run:${b.runId}:completed`));
  // The epoch's newest anchor, which every page checks the epoch's newest row against.
  const anchor = await readChainAnchor(DB, conversationId, epochId);
  const runs = [...[...receipts.values()].flatMap(toAuditRun), ...(anchor === undefined ? [] : [anchorRun(anchor)])];
  const log = await readSliceLog(DB, conversationId, frozenSliceRanges(packets.values()));
  const linkPage = auditLinkPage({ conversationId, agentId, currentEpochId: declaration.epoch.id, boundaries: page.rows, plans, packets, runs, log }, epochId, after, page.through, page.nextAfter);
  // Every page judges the gaps of its own part of the log (the pages of an epoch together judge all
  // of it) and the hashes of the events it read.
  const lastSeq = await readHead(DB, conversationId);
  const range = pageLogRange(page.rows, epochId, after, page.through, page.nextAfter === null, lastSeq);
  return ok(withLogAudit(linkPage, auditLogRange(lastSeq, range, await readLogGaps(DB, conversationId, range), log)));
}
