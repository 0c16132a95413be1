import type { AuditRun, PacketRead } from "../core/chain-audit";
import { auditChain, packetLocation, parseBoundaryBody } from "../core/chain-audit";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import type { BoundaryAuditRow } from "../storage/compaction-store";
import { currentDeclaration, readBoundaryAuditRows, readPlansByRunIds } from "../storage/compaction-store";
import { readDocument } from "../storage/document-store";
import { readAllEvents } from "../storage/event-store";
import { validate } from "../http/validation";
import type { ScopedConversationId } from "./access";
import { agentQuery } from "./queries";

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

export interface ChainListing {
  readonly conversationId: string;
  readonly agentId: string;
  readonly currentEpochId: string;
  readonly boundaries: ReturnType<typeof boundaryView>[];
}

/** `{ agent }`: every boundary of the agent in this conversation, every epoch, oldest first. */
export async function listChain(env: Env, conversationId: ScopedConversationId, query: unknown): Promise<Result<ChainListing>> {
  const parsed = validate(agentQuery, query);
  if (!parsed.ok) return parsed;
  const agentId = parsed.value.agent;
  const declaration = await currentDeclaration(env.DB, agentId);
  if (declaration === undefined) return fail("not_found", "no declaration for this agent");
  const rows = await readBoundaryAuditRows(env.DB, conversationId, agentId);
  const currentEpochId = declaration.epoch.id;
  return ok({ conversationId, agentId, currentEpochId, boundaries: rows.map((row) => boundaryView(row, currentEpochId)) });
}

export type ChainAudit = ReturnType<typeof auditChain>;

/** `{ agent }`: every link re-hashed from D1 events and R2 packets, each reported valid or with the checks it failed. */
export async function verifyChain(env: Env, conversationId: ScopedConversationId, query: unknown): Promise<Result<ChainAudit>> {
  const parsed = validate(agentQuery, query);
  if (!parsed.ok) return parsed;
  const agentId = parsed.value.agent;
  const declaration = await currentDeclaration(env.DB, agentId);
  if (declaration === undefined) return fail("not_found", "no declaration for this agent");

  const { DB, DOCUMENTS } = env;
  const boundaries = await readBoundaryAuditRows(DB, conversationId, agentId);
  const plans = await readPlansByRunIds(DB, [...new Set(boundaries.map((b) => b.runId))]);
  // One packet at a time: each read holds a connection until its body is consumed, and a Worker
  // has at most 6 open at once. An audit is not latency-sensitive; a long chain is many
  // subrequests, which bounds how long a chain one request can audit.
  const packets = new Map<string, PacketRead>();
  for (const boundary of boundaries) {
    const location = packetLocation(boundary, plans.get(boundary.runId));
    if (location === undefined) continue;
    packets.set(boundary.id, { ...location, outcome: await readDocument(DOCUMENTS, location.key, location.hash) });
  }
  // The whole log, once: frozen turns are checked against the log as it stood at each run's
  // trigger, and receipts (run events) come after it. Acceptable for an audit, never for the hot path.
  const log = await readAllEvents(DB, conversationId);
  const runs: AuditRun[] = log.flatMap((event) => {
    if (event.kind !== "run") return [];
    const boundaryId = event.body.detail?.["boundaryId"];
    return [{ runId: event.body.runId, status: event.body.status, agentId: event.body.agentId, boundaryId: typeof boundaryId === "string" ? boundaryId : null }];
  });
  return ok(auditChain({ conversationId, agentId, currentEpochId: declaration.epoch.id, boundaries, plans, packets, runs, log }));
}
