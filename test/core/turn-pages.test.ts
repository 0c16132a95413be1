import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { reconstruct } from "../../src/core/reconstruction";
import { LogIndex, turnsAsOf } from "../../src/core/turn-pages";
import { storeAll } from "./event-builders";
import { inputArbOver, policyArb } from "./log-arbitraries";

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);
/** Logs with many groups and colliding ids, and two points in them. */
const logWithPoints = fc
  .array(inputArbOver(ids("m", 10), ids("p", 8)), { maxLength: 70, size: "max" })
  .map((inputs) => storeAll(inputs))
  .chain((log) =>
    fc.record({
      log: fc.constant(log),
      after: fc.integer({ min: 0, max: log.length }),
      through: fc.integer({ min: 0, max: log.length }),
      policy: policyArb,
    }),
  );

describe("turnsAsOf", () => {
  it("gives the turns after a point exactly as folding the whole log up to another point does", () => {
    fc.assert(
      fc.property(logWithPoints, ({ log, after, through, policy }) => {
        const expected = reconstruct(log.filter((event) => event.seq <= through), policy).filter((turn) => turn.group > after);
        expect(turnsAsOf(new LogIndex(log), policy, after, through)).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it("reads a range by sequence whatever order the log was given in", () => {
    const log = storeAll([]);
    expect(new LogIndex(log).range(0, 10)).toEqual([]);
    const events = storeAll(Array.from({ length: 5 }, (_, i) => ({ kind: "source" as const, idempotencyKey: `k${i}`, sensitive: false, body: { messageId: `m${i}`, author: { id: "a" }, text: `t${i}` } })));
    expect(new LogIndex([...events].reverse()).range(1, 3).map((e) => e.seq)).toEqual([2, 3]);
  });
});
