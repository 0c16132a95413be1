/**
 * When a compactor's planned runs began and, for those closed after their retries ran out, when
 * they were abandoned: the shard's `compaction_plans` row (written in the same batch as the
 * `planned` run event) and its `compactor_abandoned` incident. An inspection read, by run id.
 */

export interface PlanSpan {
  readonly plannedAt: string;
  /** When the plan was abandoned, or null while it is open or once it settled. */
  readonly abandonedAt: string | null;
}

/** The plans among `runIds` (a page's worth: passed as one JSON array, not one variable each). */
export async function readPlanSpans(db: D1Database, conversationId: string, runIds: readonly string[]): Promise<Map<string, PlanSpan>> {
  if (runIds.length === 0) return new Map();
  const { results } = await db
    .prepare(
      `SELECT p.run_id, p.created_at,
         (SELECT MIN(i.created_at) FROM incidents i WHERE i.run_id = p.run_id AND i.kind = 'compactor_abandoned') AS abandoned_at
       FROM compaction_plans p
       WHERE p.conversation_id = ?1 AND p.run_id IN (SELECT value FROM json_each(?2))`,
    )
    .bind(conversationId, JSON.stringify([...new Set(runIds)]))
    .all<{ run_id: string; created_at: string; abandoned_at: string | null }>();
  return new Map(results.map((r) => [r.run_id, { plannedAt: r.created_at, abandonedAt: r.abandoned_at }]));
}
