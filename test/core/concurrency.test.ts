import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { concurrencyLimit } from "../../src/core/concurrency";

/** A work that runs until the test settles it, recording when it started. */
function controlled(started: number[], index: number) {
  let settle: (outcome: { ok: boolean }) => void = () => {};
  const work = () =>
    new Promise<number>((resolve, reject) => {
      started.push(index);
      settle = ({ ok }) => (ok ? resolve(index) : reject(new Error(`work ${index} failed`)));
    });
  return { work, settle: (ok: boolean) => settle({ ok }) };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("concurrencyLimit", () => {
  it("runs at most `limit` works at once, starts the next as one settles (failed or not), in order, and passes results through", async () => {
    const limit = concurrencyLimit(2);
    const started: number[] = [];
    const works = [0, 1, 2, 3].map((i) => controlled(started, i));
    const results = works.map((w) => limit(w.work).then((value) => ({ value }), (error: Error) => ({ error: error.message })));
    await flush();
    expect(started).toEqual([0, 1]);
    works[1]?.settle(false);
    await flush();
    expect(started).toEqual([0, 1, 2]);
    works[0]?.settle(true);
    await flush();
    expect(started).toEqual([0, 1, 2, 3]);
    works[2]?.settle(true);
    works[3]?.settle(true);
    expect(await Promise.all(results)).toEqual([{ value: 0 }, { error: "work 1 failed" }, { value: 2 }, { value: 3 }]);
  });

  it("never has more than `limit` running, whatever order the works settle in", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.array(fc.nat(), { minLength: 1, maxLength: 20 }), async (n, order) => {
        const limit = concurrencyLimit(n);
        let running = 0;
        let most = 0;
        const started: number[] = [];
        const works = order.map((_, i) => controlled(started, i));
        const done = works.map((w) =>
          limit(() => {
            running += 1;
            most = Math.max(most, running);
            return w.work().finally(() => (running -= 1));
          }),
        );
        for (const pick of order) {
          await flush();
          const open = works.filter((_, i) => started.includes(i));
          open[pick % Math.max(1, open.length)]?.settle(true);
        }
        for (let i = 0; i < works.length; i++) {
          await flush();
          for (const w of works) w.settle(true);
        }
        await Promise.all(done);
        expect(most).toBeLessThanOrEqual(n);
        expect(started).toEqual(works.map((_, i) => i));
      }),
      { numRuns: 50, seed: 36 },
    );
  });

  it("refuses a limit below one", () => {
    expect(() => concurrencyLimit(0)).toThrow(RangeError);
  });
});
