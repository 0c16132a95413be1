/**
 * The alert rate limit's counters, in the control database (migrations/control/0018): one row per
 * (incident kind, window start) counting the incidents of that kind whose alert that window was
 * asked for. Every isolate counts in the same row, so the limit holds across the deployment.
 */

/** Counts one more incident of `kind` in the window starting at `windowStart`; returns the window's count with it. */
export async function countAlert(db: D1Database, kind: string, windowStart: string): Promise<number> {
  const row = await db
    .prepare(
      `INSERT INTO alert_windows (kind, window_start, count) VALUES (?, ?, 1)
       ON CONFLICT (kind, window_start) DO UPDATE SET count = count + 1
       RETURNING count`,
    )
    .bind(kind, windowStart)
    .first<{ count: number }>();
  if (row === null) throw new Error("alert_windows: an upsert returned no row");
  return row.count;
}

/**
 * Takes the windows of `kind` that started before `windowStart` and returns the counts they
 * reached. They are deleted as they are read, so each one's held-back alerts are reported by
 * exactly one later alert however many isolates ask at once, and the table keeps about one row
 * per kind. An incident stamped just before its window ended and counted just after a later alert
 * took that window starts the window's count again: milliseconds' worth of incidents, not a storm.
 */
export async function takeEarlierWindows(db: D1Database, kind: string, windowStart: string): Promise<number[]> {
  const { results } = await db.prepare("DELETE FROM alert_windows WHERE kind = ? AND window_start < ? RETURNING count").bind(kind, windowStart).all<{ count: number }>();
  return results.map((row) => row.count);
}
