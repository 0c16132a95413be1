// Summary statistics. Percentiles are nearest-rank on the sorted samples (no interpolation), so a
// p99 over 200 samples is the 2nd-largest value: with so few samples it is one outlier away from
// the maximum, which is why the report prints the sample count beside every percentile.

/** @param {number[]} values @param {number} p in [0, 100] */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}

/** @param {number[]} values */
export const mean = (values) => (values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length);

/** @param {number[]} values */
export const max = (values) => (values.length === 0 ? Number.NaN : Math.max(...values));

/**
 * @param {number[]} ms latencies in milliseconds
 * @returns {{ n: number, p50: number, p90: number, p99: number, max: number, mean: number }}
 */
export function latencySummary(ms) {
  return { n: ms.length, p50: percentile(ms, 50), p90: percentile(ms, 90), p99: percentile(ms, 99), max: max(ms), mean: mean(ms) };
}

/** Rounds for the JSON report (keeps it readable and diff-friendly). @param {number} value @param {number} [digits] */
export function round(value, digits = 2) {
  if (!Number.isFinite(value)) return null;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Rounds every number in a latency summary. @param {ReturnType<typeof latencySummary>} s */
export function roundSummary(s) {
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, k === "n" ? v : round(v, 2)]));
}
