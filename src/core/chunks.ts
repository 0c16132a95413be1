/**
 * `items` in order, cut into runs of at most `maxCount` items whose `size`s add up to at most
 * `maxBytes`: what one statement's JSON parameter, or one queue batch, may carry. An item larger
 * than `maxBytes` alone makes a run of its own (the caller refuses it if nothing can carry it).
 */
export function chunksBySize<T>(items: readonly T[], size: (item: T) => number, maxBytes: number, maxCount = Number.POSITIVE_INFINITY): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const itemBytes = size(item);
    if (chunk.length > 0 && (chunk.length >= maxCount || bytes + itemBytes > maxBytes)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += itemBytes;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}
