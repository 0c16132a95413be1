/** Incidents: private operational evidence, one row each, never summarized into the chat they concern. */

/** Every kind an incident row may have (the table's CHECK constraint, migration 0010). */
export const INCIDENT_KINDS = ["compactor_failure", "compactor_abandoned", "compaction_stalled", "plan_failure", "resolver_failure", "agent_failure", "delivery_failure", "extraction_failure"] as const;
export type IncidentKind = (typeof INCIDENT_KINDS)[number];

/** What the operator sees of a chain's troubles: its newest failure of any kind, and the failed attempts of one run. */
export async function readChainTrouble(
  db: D1Database,
  conversationId: string,
  agentId: string,
  runId: string | null,
): Promise<{ lastFailure: { kind: IncidentKind; code: string; message: string; runId: string | null; createdAt: string } | null; failedAttempts: number }> {
  const last = await db
    .prepare(
      `SELECT kind, code, message, run_id, created_at FROM incidents
       WHERE conversation_id = ? AND agent_id = ? AND kind IN ('compactor_failure', 'compactor_abandoned', 'compaction_stalled', 'plan_failure', 'resolver_failure')
       ORDER BY id DESC LIMIT 1`,
    )
    .bind(conversationId, agentId)
    .first<{ kind: IncidentKind; code: string; message: string; run_id: string | null; created_at: string }>();
  const attempts =
    runId === null
      ? null
      : await db.prepare("SELECT COUNT(*) AS n FROM incidents WHERE run_id = ? AND kind = 'compactor_failure'").bind(runId).first<{ n: number }>();
  return {
    lastFailure: last === null ? null : { kind: last.kind, code: last.code, message: last.message, runId: last.run_id, createdAt: last.created_at },
    failedAttempts: attempts?.n ?? 0,
  };
}

export function insertIncidentStatement(
  db: D1Database,
  incident: { conversationId: string; agentId: string; runId: string | null; kind: IncidentKind; code: string; message: string; createdAt: string },
): D1PreparedStatement {
  return db
    .prepare("INSERT INTO incidents (conversation_id, agent_id, run_id, kind, code, message, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
    .bind(incident.conversationId, incident.agentId, incident.runId, incident.kind, incident.code, incident.message, incident.createdAt);
}

/** A stored incident as the read API serves it. */
export interface IncidentRecord {
  readonly id: number;
  readonly agentId: string;
  readonly runId: string | null;
  readonly kind: IncidentKind;
  readonly code: string;
  readonly message: string;
  readonly createdAt: string;
}

/**
 * One page of a conversation's incidents, oldest first, after the id `after`, at most `limit`.
 * Ids are AUTOINCREMENT and D1 commits one writer at a time, so an incident recorded while a
 * reader pages always gets an id above every id already read: ascending paging never skips one.
 * One row beyond `limit` is read to tell a full last page from a page with more behind it.
 * `incidents_by_conversation (conversation_id, id)` serves the range without a sort.
 */
export async function readIncidentPage(
  db: D1Database,
  conversationId: string,
  after: number,
  limit: number,
): Promise<{ incidents: IncidentRecord[]; more: boolean }> {
  const { results } = await db
    .prepare("SELECT id, agent_id, run_id, kind, code, message, created_at FROM incidents WHERE conversation_id = ? AND id > ? ORDER BY id LIMIT ?")
    .bind(conversationId, after, limit + 1)
    .all<{ id: number; agent_id: string; run_id: string | null; kind: IncidentKind; code: string; message: string; created_at: string }>();
  return {
    incidents: results.slice(0, limit).map((r) => ({ id: r.id, agentId: r.agent_id, runId: r.run_id, kind: r.kind, code: r.code, message: r.message, createdAt: r.created_at })),
    more: results.length > limit,
  };
}
