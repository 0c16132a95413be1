import type { Boundary } from "../../core/boundary";
import { boundaryBodySchema } from "../../core/boundary";
import { canonicalJson } from "../../core/hash";

/**
 * Boundary rows as the engine reads them (validated bodies). The UNIQUE constraints on a chain's
 * position and predecessor make a fork unstorable; audit reads that must report a malformed row
 * rather than throw are in `storage/shard/boundary-audit`.
 */

export interface StoredBoundary extends Boundary {
  readonly runId: string;
  readonly epochId: string;
  readonly position: number;
  readonly previousId: string;
  readonly coveredThroughSeq: number;
}

export interface BoundaryRow {
  id: string;
  epoch_id: string;
  position: number;
  previous_id: string;
  covered_through_seq: number;
  run_id: string;
  body: string;
  hash: string;
}

export function toBoundary(row: BoundaryRow): StoredBoundary {
  return {
    body: boundaryBodySchema.parse(JSON.parse(row.body) as unknown),
    hash: row.hash,
    runId: row.run_id,
    epochId: row.epoch_id,
    position: row.position,
    previousId: row.previous_id,
    coveredThroughSeq: row.covered_through_seq,
  };
}

/** A boundary just written, as a read of its row gives it back (its body through the same JSON and schema). */
export function storedBoundary(boundary: Boundary, runId: string, epochId: string): StoredBoundary {
  const { body, hash } = boundary;
  return toBoundary({
    id: body.id,
    epoch_id: epochId,
    position: body.position,
    previous_id: body.previous?.id ?? "",
    covered_through_seq: body.coveredThrough.seq,
    run_id: runId,
    body: canonicalJson(body),
    hash,
  });
}

export const BOUNDARY_COLUMNS = "id, epoch_id, position, previous_id, covered_through_seq, run_id, body, hash";

export function insertBoundaryStatement(db: D1Database, conversationId: string, agentId: string, epochId: string, boundary: Boundary): D1PreparedStatement {
  const { body } = boundary;
  return db
    .prepare(
      `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      body.id,
      conversationId,
      agentId,
      epochId,
      body.position,
      body.previous?.id ?? "",
      body.previous?.hash ?? null,
      body.coveredThrough.seq,
      body.run.id,
      canonicalJson(body),
      boundary.hash,
      body.createdAt,
    );
}

export async function readBoundaryByRun(db: D1Database, runId: string): Promise<StoredBoundary | undefined> {
  const row = await db.prepare(`SELECT ${BOUNDARY_COLUMNS} FROM boundaries WHERE run_id = ?`).bind(runId).first<BoundaryRow>();
  return row === null ? undefined : toBoundary(row);
}

export async function readHeadBoundary(db: D1Database, conversationId: string, agentId: string, epochId: string): Promise<StoredBoundary | undefined> {
  const row = await db
    .prepare(`SELECT ${BOUNDARY_COLUMNS} FROM boundaries WHERE conversation_id = ? AND agent_id = ? AND epoch_id = ? ORDER BY position DESC LIMIT 1`)
    .bind(conversationId, agentId, epochId)
    .first<BoundaryRow>();
  return row === null ? undefined : toBoundary(row);
}
