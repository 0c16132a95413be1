import type { AuditPlan } from "../../core/chain-audit";

/**
 * Compaction plans: one row per planned run, naming its packet. A plan is open until a boundary
 * names its run or a `compactor_abandoned` incident closes it.
 */

/** A `compaction_plans` row as the engine uses it: the audit's plan shape plus when it was made. */
export interface PlanRecord extends AuditPlan {
  readonly createdAt: string;
}

export interface PlanRow {
  run_id: string;
  conversation_id: string;
  agent_id: string;
  epoch_id: string;
  previous_boundary_id: string;
  packet_key: string;
  packet_hash: string;
  trigger_seq: number;
  through_seq: number;
  created_at: string;
}

export const toPlan = (row: PlanRow): PlanRecord => ({
  runId: row.run_id,
  conversationId: row.conversation_id,
  agentId: row.agent_id,
  epochId: row.epoch_id,
  previousBoundaryId: row.previous_boundary_id,
  packetKey: row.packet_key,
  packetHash: row.packet_hash,
  triggerSeq: row.trigger_seq,
  throughSeq: row.through_seq,
  createdAt: row.created_at,
});

export function insertPlanStatement(db: D1Database, plan: PlanRecord): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(plan.runId, plan.conversationId, plan.agentId, plan.epochId, plan.previousBoundaryId, plan.packetKey, plan.packetHash, plan.triggerSeq, plan.throughSeq, plan.createdAt);
}

export async function readPlan(db: D1Database, runId: string): Promise<PlanRecord | undefined> {
  const row = await db.prepare("SELECT * FROM compaction_plans WHERE run_id = ?").bind(runId).first<PlanRow>();
  return row === null ? undefined : toPlan(row);
}

/** Whether a plan was closed after its retries were exhausted (a `compactor_abandoned` incident names it). */
export async function planAbandoned(db: D1Database, runId: string): Promise<boolean> {
  const row = await db.prepare("SELECT 1 AS present FROM incidents WHERE run_id = ? AND kind = 'compactor_abandoned' LIMIT 1").bind(runId).first<{ present: number }>();
  return row !== null;
}

/** The newest plan of a chain that has no boundary yet: the compaction in flight, if any. */
export async function readOpenPlan(db: D1Database, conversationId: string, agentId: string, epochId: string): Promise<PlanRecord | undefined> {
  const row = await db
    .prepare(
      `SELECT p.* FROM compaction_plans p
       WHERE p.conversation_id = ? AND p.agent_id = ? AND p.epoch_id = ?
         AND NOT EXISTS (SELECT 1 FROM boundaries b WHERE b.run_id = p.run_id)
         AND NOT EXISTS (SELECT 1 FROM incidents i WHERE i.run_id = p.run_id AND i.kind = 'compactor_abandoned')
       ORDER BY p.created_at DESC, p.rowid DESC LIMIT 1`,
    )
    .bind(conversationId, agentId, epochId)
    .first<PlanRow>();
  return row === null ? undefined : toPlan(row);
}

/**
 * How many plans of a chain were abandoned since its head (`previousBoundaryId`): the chain's
 * consecutive failures, read from the log's evidence so that a backoff survives an eviction.
 */
export async function countAbandonedPlans(db: D1Database, conversationId: string, agentId: string, epochId: string, previousBoundaryId: string): Promise<number> {
  const row = await db
    .prepare(
      `SELECT COUNT(*) AS n FROM compaction_plans p
       WHERE p.conversation_id = ? AND p.agent_id = ? AND p.epoch_id = ? AND p.previous_boundary_id = ?
         AND EXISTS (SELECT 1 FROM incidents i WHERE i.run_id = p.run_id AND i.kind = 'compactor_abandoned')`,
    )
    .bind(conversationId, agentId, epochId, previousBoundaryId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/**
 * The plan rows of the given runs, whatever chain they claim to belong to (the audit reports a
 * plan of another agent or epoch rather than not finding it). One JSON parameter, not one per id:
 * D1 caps bound parameters per statement at 100.
 */
export async function readPlansByRunIds(db: D1Database, runIds: readonly string[]): Promise<Map<string, PlanRecord>> {
  if (runIds.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT * FROM compaction_plans WHERE run_id IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(runIds))
    .all<PlanRow>();
  return new Map(results.map((row) => [row.run_id, toPlan(row)]));
}
