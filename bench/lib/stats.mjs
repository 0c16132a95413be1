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

/**
 * p99 of the first and second half of a point's samples (in time order): how far p99 moves within
 * one point with nothing changed but time, i.e. the noise floor the ratios should be read against.
 * @param {number[]} samples
 */
export function halves(samples) {
  const mid = Math.floor(samples.length / 2);
  return { firstHalfP99: round(percentile(samples.slice(0, mid), 99), 1), secondHalfP99: round(percentile(samples.slice(mid), 99), 1) };
}

/** Consecutive thirds of the round-robin samples: three repetitions of the measurement, in time order. */
const REPETITIONS = 3;

/**
 * A target's ratio (`numerator` point ÷ `denominator` point) in each repetition: the samples of
 * both points split into the same consecutive slices (taken round-robin, so a slice of one point
 * is measured at the same time as the same slice of the other), with each slice's p50 and p99
 * ratio, and their median, min and max. The verdict is the median's; the spread says whether
 * it can be trusted (`report.mjs`).
 * @param {number[]} numerator @param {number[]} denominator
 */
export function repetitions(numerator, denominator) {
  const slice = (/** @type {number[]} */ samples, /** @type {number} */ i) => samples.slice(Math.floor((samples.length * i) / REPETITIONS), Math.floor((samples.length * (i + 1)) / REPETITIONS));
  const reps = Array.from({ length: REPETITIONS }, (_, i) => {
    const top = slice(numerator, i);
    const bottom = slice(denominator, i);
    return { n: top.length, p50Ratio: round(percentile(top, 50) / percentile(bottom, 50), 3), p99Ratio: round(percentile(top, 99) / percentile(bottom, 99), 3) };
  });
  const spread = (/** @type {number[]} */ values) => {
    const sorted = [...values].sort((x, y) => x - y);
    return { median: sorted[Math.floor(sorted.length / 2)] ?? NaN, min: sorted[0] ?? NaN, max: sorted.at(-1) ?? NaN };
  };
  return { reps, p50: spread(reps.map((r) => r.p50Ratio)), p99: spread(reps.map((r) => r.p99Ratio)) };
}
