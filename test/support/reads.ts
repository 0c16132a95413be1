import type { BoundaryRow, StoredBoundary } from "../../src/storage/shard/boundaries";
import { BOUNDARY_COLUMNS, toBoundary } from "../../src/storage/shard/boundaries";

/**
 * What the tests read back from D1 that the service itself never reads this way: a chain's every
 * boundary row, across epochs, and a conversation's newest incidents.
 */

/** Every boundary of one chain (in one epoch, or all), oldest first (forks included, if storage was forced). */
export async function readChainBoundaries(db: D1Database, conversationId: string, agentId: string, epochId?: string): Promise<StoredBoundary[]> {
  const { results } = await db
    .prepare(
      `SELECT ${BOUNDARY_COLUMNS} FROM boundaries
       WHERE conversation_id = ?1 AND agent_id = ?2 AND (?3 IS NULL OR epoch_id = ?3)
       ORDER BY created_at, position`,
    )
    .bind(conversationId, agentId, epochId ?? null)
    .all<BoundaryRow>();
  return results.map(toBoundary);
}

export async function readIncidents(
  db: D1Database,
  conversationId: string,
  limit: number,
): Promise<{ id: number; agentId: string; runId: string | null; kind: string; code: string; message: string; detail: string | null; createdAt: string }[]> {
  const { results } = await db
    .prepare("SELECT id, agent_id, run_id, kind, code, message, detail, created_at FROM incidents WHERE conversation_id = ? ORDER BY id DESC LIMIT ?")
    .bind(conversationId, limit)
    .all<{ id: number; agent_id: string; run_id: string | null; kind: string; code: string; message: string; detail: string | null; created_at: string }>();
  return results.map((r) => ({ id: r.id, agentId: r.agent_id, runId: r.run_id, kind: r.kind, code: r.code, message: r.message, detail: r.detail, createdAt: r.created_at }));
}
