import type { SizeSample } from "../../core/chart-geometry";
import { IN_LOG, INSPECTED_EVENTS, NEWEST_EVENTS_AFTER, shortCompactor, shortPath, shortSource, skippedPath, SPELLED_SHORT_ROW, STORED_SKIPPED } from "./events";

/**
 * A chain's active context size over time, as its compactor's preflight recorded it: every
 * admitted source writes a content-dark `run` event, `skipped` with the active size and the trigger
 * it was weighed against (`core/preflight-decider` `skippedRun`), or `planned` with the size that
 * triggered the plan (`durable/planner`). The log already holds the series, so no table keeps it.
 * A skipped run's row holds its values as an array (`core/stored-body`), read here by position, and
 * since migrations/shard/0033 its key names its compactor and source.
 */

/**
 * The newest `limit` preflight sizes of the compactor `compactorId` among the conversation's newest
 * `window` events, oldest first. The conversation's rows are walked newest first through the primary
 * key until `limit` match or the window ends, so the read is bounded by the window even for a
 * compactor that stopped serving the conversation long ago, not by the log nor the shard.
 */
export async function readPreflightSizes(db: D1Database, conversationId: string, compactorId: string, limit: number, window = INSPECTED_EVENTS): Promise<SizeSample[]> {
  // A row's form: 2 a skipped run spelled short (0033), 1 one spelled as its six values (0031), 0 a run's body whole.
  const { results } = await db
    .prepare(
      `SELECT CASE form WHEN 2 THEN CAST(${shortSource("idempotency_key")} AS INTEGER) WHEN 1 THEN json_extract(body, ${skippedPath("sourceSeq")})
                   ELSE COALESCE(json_extract(body, '$.detail.sourceSeq'), json_extract(body, '$.detail.triggerSeq'), seq) END AS source_seq,
              json_extract(body, CASE form WHEN 2 THEN ${shortPath("activeChars")} WHEN 1 THEN ${skippedPath("activeChars")} ELSE '$.detail.activeChars' END) AS active_chars,
              json_extract(body, CASE form WHEN 2 THEN ${shortPath("triggerInputChars")} WHEN 1 THEN ${skippedPath("triggerInputChars")} ELSE '$.detail.triggerInputChars' END) AS trigger_chars,
              CASE WHEN form > 0 THEN 'skipped' ELSE json_extract(body, '$.status') END AS status
       FROM (SELECT seq, idempotency_key, body, CASE WHEN ${SPELLED_SHORT_ROW} THEN 2 WHEN ${STORED_SKIPPED} THEN 1 ELSE 0 END AS form
             FROM log WHERE ${IN_LOG} AND seq > ${NEWEST_EVENTS_AFTER} AND kind = 'run')
       WHERE CASE form WHEN 2 THEN ${shortCompactor("idempotency_key")} = (SELECT id FROM compactor_keys WHERE compactor_id = ?3)
             WHEN 1 THEN json_extract(body, ${skippedPath("compactor")}) = ?3
             ELSE json_extract(body, '$.role') = 'compactor' AND json_extract(body, '$.agentId') = ?3
               AND json_extract(body, '$.status') IN ('skipped', 'planned') AND json_extract(body, '$.detail.activeChars') IS NOT NULL END
       ORDER BY seq DESC LIMIT ?4`,
    )
    .bind(conversationId, window, compactorId, limit)
    .all<{ source_seq: number; active_chars: number; trigger_chars: number | null; status: string }>();
  return results
    .map((r) => ({ seq: r.source_seq, activeChars: r.active_chars, triggerChars: r.trigger_chars, planned: r.status === "planned" }))
    .reverse();
}
