/**
 * The fleet page's numbers over time, pure: the window of hours it draws, how a compaction's lag is
 * binned so that every shard can aggregate in SQL and the fleet still gets a median, and how the
 * shards' rows become one series. The statements that produce the rows are `storage/shard/fleet`;
 * the page only draws what these functions return.
 */

/** The window the page draws when none is asked for. */
export const DEFAULT_WINDOW_HOURS = 24;

/**
 * A week at most: every chart reads at most one row per hour and bin (or kind) from each shard, so
 * this bounds what one page view reads, however busy the fleet.
 */
export const MAX_WINDOW_HOURS = 168;

const HOUR_MS = 3_600_000;

/**
 * An hour's key is the first 13 characters of an ISO 8601 UTC time (`2026-12-01T19`). Every time
 * the shards store is written by `Date.prototype.toISOString`, so SQL buckets a row by
 * `substr(column, 1, HOUR_KEY_LENGTH)` and the key sorts as the hour does.
 */
export const HOUR_KEY_LENGTH = 13;

export const hourKey = (iso: string): string => iso.slice(0, HOUR_KEY_LENGTH);

export interface HourWindow {
  /** The start of the oldest hour: rows at or after it are read. */
  readonly since: string;
  /** Every hour of the window, oldest first, the current (partial) hour last. */
  readonly hours: readonly string[];
}

/** The `hours` whole hours that end with the one `now` is in. */
export function hourWindow(now: Date, hours: number): HourWindow {
  const current = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS;
  const starts = Array.from({ length: hours }, (_, i) => new Date(current - (hours - 1 - i) * HOUR_MS).toISOString());
  return { since: starts[0] ?? new Date(current).toISOString(), hours: starts.map(hourKey) };
}

// ---------------------------------------------------------------------------------------------
// Compaction lag

/**
 * The bins a lag (a boundary's settle time minus its plan's, in milliseconds) is counted in: a lag
 * is in bin `b`, the number of edges at or below it, so bin 0 is under 10 ms and the last is a week
 * or more. Edges grow by a factor of 2^(1/4), so a bin is 19% wide (a millisecond more where
 * rounding to whole milliseconds adds one). Histograms add up across shards where medians do not,
 * and a shard returns at most one row per hour and bin.
 */
export const LAG_BIN_EDGES_MS: readonly number[] = Array.from({ length: 105 }, (_, i) => Math.round(10 * 2 ** (i / 4)));

/** One shard's settled boundaries of one hour whose lags fall in one bin. */
export interface LagCell {
  readonly hour: string;
  readonly bin: number;
  readonly settled: number;
  readonly maxMs: number;
}

export interface LagPoint {
  readonly hour: string;
  readonly settled: number;
  /**
   * The largest lag in the bin that holds the median (the lower median, for an even count): never
   * below the true median, and at most one bin (19%) above it; exact when the median is its bin's
   * largest lag.
   */
  readonly p50Ms: number;
  readonly maxMs: number;
}

/** Every shard's cells merged into one point per hour that has any, oldest first. */
export function lagSeries(cells: readonly LagCell[]): LagPoint[] {
  const hours = new Map<string, Map<number, { settled: number; maxMs: number }>>();
  for (const cell of cells) {
    const bins = hours.get(cell.hour) ?? new Map<number, { settled: number; maxMs: number }>();
    hours.set(cell.hour, bins);
    const bin = bins.get(cell.bin);
    bins.set(cell.bin, { settled: (bin?.settled ?? 0) + cell.settled, maxMs: Math.max(bin?.maxMs ?? 0, cell.maxMs) });
  }
  return [...hours]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([hour, bins]) => {
      const ordered = [...bins].sort(([a], [b]) => a - b).map(([, bin]) => bin);
      const settled = ordered.reduce((n, bin) => n + bin.settled, 0);
      return { hour, settled, p50Ms: medianBinMax(ordered, Math.ceil(settled / 2)), maxMs: Math.max(0, ...ordered.map((bin) => bin.maxMs)) };
    });
}

/** The largest lag of the first bin (in lag order) by which `rank` lags have been counted. */
function medianBinMax(ordered: readonly { readonly settled: number; readonly maxMs: number }[], rank: number): number {
  let counted = 0;
  for (const bin of ordered) {
    counted += bin.settled;
    if (counted >= rank) return bin.maxMs;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Failures

/**
 * One shard's incidents of one kind last seen in one hour. An incident that repeats while open is
 * one row with a count: it is counted once, in the hour it was last seen, and its occurrences are
 * carried beside it.
 */
export interface FailureCell<Kind extends string = string> {
  readonly hour: string;
  readonly kind: Kind;
  readonly incidents: number;
  readonly occurrences: number;
}

export interface FailureHour<Kind extends string = string> {
  readonly hour: string;
  readonly incidents: number;
  /** Each kind seen in the hour, in the order of `kinds` given to `failureSeries`. */
  readonly kinds: readonly { readonly kind: Kind; readonly incidents: number; readonly occurrences: number }[];
}

/** Every shard's cells merged into one entry per hour that has any, oldest first, kinds in `kinds` order. */
export function failureSeries<Kind extends string>(cells: readonly FailureCell<Kind>[], kinds: readonly Kind[]): FailureHour<Kind>[] {
  const hours = new Map<string, Map<Kind, { incidents: number; occurrences: number }>>();
  for (const cell of cells) {
    const byKind = hours.get(cell.hour) ?? new Map<Kind, { incidents: number; occurrences: number }>();
    hours.set(cell.hour, byKind);
    const seen = byKind.get(cell.kind);
    byKind.set(cell.kind, { incidents: (seen?.incidents ?? 0) + cell.incidents, occurrences: (seen?.occurrences ?? 0) + cell.occurrences });
  }
  return [...hours]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([hour, byKind]) => {
      const list = [...byKind].map(([kind, n]) => ({ kind, ...n })).sort((a, b) => kinds.indexOf(a.kind) - kinds.indexOf(b.kind));
      return { hour, incidents: list.reduce((n, k) => n + k.incidents, 0), kinds: list };
    });
}

// ---------------------------------------------------------------------------------------------
// Busiest conversations

export interface BusyConversation {
  readonly conversationId: string;
  readonly shard: string;
  /** Events recorded in the window. */
  readonly events: number;
  readonly lastRecordedAt: string;
}

/**
 * The `limit` conversations with the most events in the window, from each shard's own first
 * `limit`: a conversation lives on one shard, so the fleet's first `limit` are among them. Ties go
 * to the smaller id, so the list does not reorder between two views of the same data.
 */
export function busiest(lists: readonly (readonly BusyConversation[])[], limit: number): BusyConversation[] {
  return lists
    .flat()
    .sort((a, b) => b.events - a.events || (a.conversationId < b.conversationId ? -1 : a.conversationId > b.conversationId ? 1 : 0))
    .slice(0, limit);
}
