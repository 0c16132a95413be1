/**
 * Binary search over sorted arrays: the window, a log index and a fold each look up sequence
 * numbers in what they hold in order.
 */

/** The index of the first item for which `before` is false, where it holds for a prefix of `items` and for nothing after. */
export function partitionPoint<T>(items: readonly T[], before: (item: T) => boolean): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(items[mid] as T)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The greatest of ascending `seqs` below `seq` (0: none). */
export const latestBelow = (seqs: readonly number[], seq: number): number => seqs[partitionPoint(seqs, (s) => s < seq) - 1] ?? 0;
