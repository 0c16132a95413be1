import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chunksBySize } from "../../src/core/chunks";

describe("chunksBySize", () => {
  it("cuts where the next item would pass the bytes or the count, keeps order, and gives an oversized item a run of its own", () => {
    expect(chunksBySize([3, 3, 3, 3], (n) => n, 7)).toEqual([[3, 3], [3, 3]]);
    expect(chunksBySize([1, 1, 1, 1, 1], (n) => n, 100, 2)).toEqual([[1, 1], [1, 1], [1]]);
    expect(chunksBySize([2, 9, 2], (n) => n, 5)).toEqual([[2], [9], [2]]);
    expect(chunksBySize([], (n: number) => n, 5)).toEqual([]);
  });

  it("loses, repeats and reorders nothing, and passes a limit only with a run of one", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 200 }), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 10 }), (items, maxBytes, maxCount) => {
        const chunks = chunksBySize(items, (n) => n, maxBytes, maxCount);
        expect(chunks.flat()).toEqual(items);
        for (const chunk of chunks) {
          expect(chunk.length).toBeGreaterThan(0);
          expect(chunk.length).toBeLessThanOrEqual(maxCount);
          if (chunk.length > 1) expect(chunk.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(maxBytes);
        }
      }),
      { numRuns: 200, seed: 36 },
    );
  });
});
