import type { SizeSample } from "../../core/chart-geometry";

/**
 * A chain's active context size over time, as its compactor's preflight recorded it: every
 * admitted source writes a content-dark `run` event, `skipped` with the active size and the trigger
 * it was weighed against (`core/preflight-decider` `skippedRun`), or `planned` with the size that
 * triggered the plan (`durable/planner`). The log already holds the series, so no table keeps it.
 */

/**
 * The newest `limit` preflight sizes of the compactor `compactorId` in the conversation, oldest
 * first. The conversation's rows are walked newest first through the primary key until `limit`
 * match, so the read is bounded by the conversation's recent log, not by the shard.
 */
export async function readPreflightSizes(db: D1Database, conversationId: string, compactorId: string, limit: number): Promise<SizeSample[]> {
  const { results } = await db
    .prepare(
      `SELECT COALESCE(json_extract(body, '$.detail.sourceSeq'), json_extract(body, '$.detail.triggerSeq'), seq) AS source_seq,
              json_extract(body, '$.detail.activeChars') AS active_chars,
              json_extract(body, '$.detail.triggerInputChars') AS trigger_chars,
              json_extract(body, '$.status') AS status
       FROM events
       WHERE conversation_id = ?1 AND kind = 'run' AND json_extract(body, '$.role') = 'compactor' AND json_extract(body, '$.agentId') = ?2
         AND json_extract(body, '$.status') IN ('skipped', 'planned') AND json_extract(body, '$.detail.activeChars') IS NOT NULL
       ORDER BY seq DESC LIMIT ?3`,
    )
    .bind(conversationId, compactorId, limit)
    .all<{ source_seq: number; active_chars: number; trigger_chars: number | null; status: string }>();
  return results
    .map((r) => ({ seq: r.source_seq, activeChars: r.active_chars, triggerChars: r.trigger_chars, planned: r.status === "planned" }))
    .reverse();
}
