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
 * not every boundary the shard holds. The busiest conversations are counted by a search of each
 * conversation's log by time (`readBusiestConversations`), so a page view never walks a shard's
 * whole log, and no index on time is kept on the append path for a page an operator opens now and then.
 */

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

/**
 * The shard's `limit` conversations with the most events recorded since `since`, most first. Each
 * conversation whose newest event is that recent has the first of them found by a binary search of
 * its log by time (one primary-key seek a step; the log's times follow its sequence, its one
 * writer being the conversation's object), so a conversation costs one seek when idle and about
 * twice the logarithm of its length when not, whatever it said in the window: one statement whose
 * rows read follow the shard's conversations (a seek each), never their logs.
 */
export async function readBusiestConversations(db: D1Database, shard: string, since: string, limit: number): Promise<BusyConversation[]> {
  const at = "(SELECT recorded_at FROM log WHERE conversation_key = s.key AND seq = (s.lo + s.hi) / 2)";
  const { results } = await db
    .prepare(
      `WITH RECURSIVE active (key, conversation_id, last_seq, last_ms) AS MATERIALIZED (
         SELECT k.id, c.id, c.last_seq, (SELECT recorded_at FROM log WHERE conversation_key = k.id AND seq = c.last_seq)
         FROM conversations c JOIN conversation_keys k ON k.conversation_id = c.id WHERE c.last_seq > 0
       ),
       s (key, lo, hi) AS (
         SELECT key, 1, last_seq FROM active WHERE last_ms >= ?1
         UNION ALL
         SELECT key, CASE WHEN ${at} >= ?1 THEN lo ELSE (lo + hi) / 2 + 1 END, CASE WHEN ${at} >= ?1 THEN (lo + hi) / 2 ELSE hi END
         FROM s WHERE lo < hi
       )
       SELECT a.conversation_id AS conversation_id, a.last_seq - s.lo + 1 AS events, a.last_ms AS last_ms
       FROM s JOIN active a ON a.key = s.key WHERE s.lo = s.hi
       ORDER BY events DESC, conversation_id LIMIT ?2`,
    )
    .bind(Date.parse(since), limit)
    .all<{ conversation_id: string; events: number; last_ms: number }>();
  return results.map((r) => ({ conversationId: r.conversation_id, shard, events: r.events, lastRecordedAt: new Date(r.last_ms).toISOString() }));
}
