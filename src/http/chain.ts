import { Hono } from "hono";
import { z } from "zod";
import type { AuditRun, PacketRead } from "../core/chain-audit";
import { auditChain, packetLocation, parseBoundaryBody } from "../core/chain-audit";
import { agentIdSchema } from "../core/events";
import type { BoundaryAuditRow } from "../storage/compaction-store";
import { currentDeclaration, readBoundaryAuditRows, readPlansByRunIds } from "../storage/compaction-store";
import { readDocument } from "../storage/document-store";
import { readAllEvents } from "../storage/event-store";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import type { AppEnv } from "./types";
import { validate } from "./validation";

/**
 * The operator's view of an agent's boundary chain in one conversation, under `/v1/conversations`:
 * `chain` lists every boundary of every epoch as stored, `verify` re-derives every link's claims
 * (`core/chain-audit`). Both are inspection routes, never on the append or selection path.
 *
 * Boundaries are sensitive derived claims: neither route returns a summary. The listing carries
 * the bounded preview the contract derives for exactly this purpose; the audit carries none.
 */

const agentQuery = z.object({ agent: agentIdSchema });

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

export const chainRoutes = new Hono<AppEnv>()
  .get("/:conversation/chain", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const query = validate(agentQuery, c.req.query());
    if (!query.ok) return problem(c, query.error);
    const declaration = await currentDeclaration(c.env.DB, query.value.agent);
    if (declaration === undefined) return problem(c, { code: "not_found", message: "no declaration for this agent" });
    const rows = await readBoundaryAuditRows(c.env.DB, conversation.value, query.value.agent);
    const currentEpochId = declaration.epoch.id;
    return c.json({
      conversationId: conversation.value,
      agentId: query.value.agent,
      currentEpochId,
      boundaries: rows.map((row) => boundaryView(row, currentEpochId)),
    });
  })
  .get("/:conversation/verify", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const query = validate(agentQuery, c.req.query());
    if (!query.ok) return problem(c, query.error);
    const agentId = query.value.agent;
    const declaration = await currentDeclaration(c.env.DB, agentId);
    if (declaration === undefined) return problem(c, { code: "not_found", message: "no declaration for this agent" });

    const { DB, DOCUMENTS } = c.env;
    const boundaries = await readBoundaryAuditRows(DB, conversation.value, agentId);
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
    const log = await readAllEvents(DB, conversation.value);
    const runs: AuditRun[] = log.flatMap((event) => {
      if (event.kind !== "run") return [];
      const boundaryId = event.body.detail?.["boundaryId"];
      return [{ runId: event.body.runId, status: event.body.status, agentId: event.body.agentId, boundaryId: typeof boundaryId === "string" ? boundaryId : null }];
    });
    return c.json(
      auditChain({
        conversationId: conversation.value,
        agentId,
        currentEpochId: declaration.epoch.id,
        boundaries,
        plans,
        packets,
        runs,
        log,
      }),
    );
  });
