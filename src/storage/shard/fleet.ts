import type { BusyConversation, FailureCell, LagCell } from "../../core/fleet-series";
import { HOUR_KEY_LENGTH } from "../../core/fleet-series";
import type { IncidentKind } from "./incidents";

/**
 * The statements behind the inspector's fleet page. Each reads one shard and aggregates there
 * (`GROUP BY` an hour and a bin or kind, or `LIMIT`), so what a shard returns is bounded by the
 * window and the bins (`core/fleet-series`), never by how many rows it holds; the page asks every
 * shard at once and merges.
 *
 * The lag reads the boundaries settled in the window (`boundaries_settled`, migrations/shard/0030),
 * not every boundary the shard holds. The busiest conversations are counted over
 * the shard's newest `BUSIEST_SCAN_EVENTS` events only (a range of the log's rowid, which follows
 * insertion), so a page view never walks a shard's whole log, and no index on time is kept on the
 * append path for a page an operator opens now and then.
 */

/** How many of a shard's newest events the busiest conversations are counted over. */
export const BUSIEST_SCAN_EVENTS = 20_000;

/**
 * Every boundary settled since `since`, counted by the hour it settled in and the bin of its lag
 * (`LAG_BIN_EDGES_MS`, passed as `edges`): the lag is the boundary's `created_at` minus its plan's,
 * joined by run id (every boundary has its plan: the foreign key), in whole milliseconds and never
 * negative (two isolates' clocks may disagree by a little).
 */
export async function readLagCells(db: D1Database, since: string, edges: readonly number[]): Promise<LagCell[]> {
  const { results } = await db
    .prepare(
      `SELECT hour, bin, COUNT(*) AS settled, MAX(lag_ms) AS max_ms FROM (
         SELECT hour, lag_ms, (SELECT COUNT(*) FROM json_each(?2) WHERE value <= lag_ms) AS bin FROM (
           SELECT substr(b.created_at, 1, ?3) AS hour,
                  MAX(0, CAST(ROUND((julianday(b.created_at) - julianday(p.created_at)) * 86400000) AS INTEGER)) AS lag_ms
           FROM boundaries b JOIN compaction_plans p ON p.run_id = b.run_id
           WHERE b.created_at >= ?1
         )
       )
       GROUP BY hour, bin`,
    )
    .bind(since, JSON.stringify(edges), HOUR_KEY_LENGTH)
    .all<{ hour: string; bin: number; settled: number; max_ms: number }>();
  return results.map((r) => ({ hour: r.hour, bin: r.bin, settled: r.settled, maxMs: r.max_ms }));
}

/**
 * Incidents last seen since `since`, counted by that hour and their kind, with their occurrences
 * (`count`: a condition that repeats while open is one row). `incidents_by_last_seen` serves the range.
 */
export async function readFailureCells(db: D1Database, since: string): Promise<FailureCell<IncidentKind>[]> {
  const { results } = await db
    .prepare(
      `SELECT substr(last_seen_at, 1, ?2) AS hour, kind, COUNT(*) AS incidents, SUM(count) AS occurrences
       FROM incidents WHERE last_seen_at >= ?1 GROUP BY hour, kind`,
    )
    .bind(since, HOUR_KEY_LENGTH)
    .all<FailureCell<IncidentKind>>();
  return results;
}

/** The shard's `limit` conversations with the most events recorded since `since` among its newest `BUSIEST_SCAN_EVENTS`, most first. */
export async function readBusiestConversations(db: D1Database, shard: string, since: string, limit: number): Promise<BusyConversation[]> {
  const { results } = await db
    .prepare(
      `SELECT conversation_id, COUNT(*) AS events, MAX(recorded_at) AS last_recorded_at FROM events
       WHERE rowid > (SELECT COALESCE(MAX(rowid), 0) FROM events) - ?3 AND recorded_at >= ?1
       GROUP BY conversation_id ORDER BY events DESC, conversation_id LIMIT ?2`,
    )
    .bind(since, limit, BUSIEST_SCAN_EVENTS)
    .all<{ conversation_id: string; events: number; last_recorded_at: string }>();
  return results.map((r) => ({ conversationId: r.conversation_id, shard, events: r.events, lastRecordedAt: r.last_recorded_at }));
}
