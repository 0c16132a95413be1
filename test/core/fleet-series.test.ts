import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { FailureCell, LagCell } from "../../src/core/fleet-series";
import { LAG_BIN_EDGES_MS, MAX_WINDOW_HOURS, busiest, failureSeries, hourKey, hourWindow, lagSeries } from "../../src/core/fleet-series";

/** The bin a lag is counted in, as `storage/shard/fleet` counts it in SQL: the edges at or below it. */
const binOf = (lagMs: number): number => LAG_BIN_EDGES_MS.filter((edge) => edge <= lagMs).length;

/** What a set of shards would return for `lags` (hour, lag, shard): one cell per shard, hour and bin. */
function cellsOf(lags: readonly { hour: string; lagMs: number; shard: number }[]): LagCell[] {
  const cells = new Map<string, { hour: string; bin: number; settled: number; maxMs: number }>();
  for (const { hour, lagMs, shard } of lags) {
    const key = `${shard} ${hour} ${binOf(lagMs)}`;
    const cell = cells.get(key) ?? { hour, bin: binOf(lagMs), settled: 0, maxMs: 0 };
    cells.set(key, { ...cell, settled: cell.settled + 1, maxMs: Math.max(cell.maxMs, lagMs) });
  }
  return [...cells.values()];
}

describe("hourWindow", () => {
  it("ends with the hour `now` is in and starts at the top of the oldest", () => {
    expect(hourWindow(new Date("2026-12-01T19:17:05.123Z"), 3)).toEqual({ since: "2026-12-01T17:00:00.000Z", hours: ["2026-12-01T17", "2026-12-01T18", "2026-12-01T19"] });
    expect(hourWindow(new Date("2026-12-01T00:00:00.000Z"), 2).hours).toEqual(["2026-11-30T23", "2026-12-01T00"]);
    expect(hourWindow(new Date("2026-12-01T19:59:59.999Z"), 1)).toEqual({ since: "2026-12-01T19:00:00.000Z", hours: ["2026-12-01T19"] });
  });

  it("holds every stored time of the window in exactly one of its hours", () => {
    fc.assert(
      fc.property(fc.date({ min: new Date("2020-01-01"), max: new Date("2030-01-01"), noInvalidDate: true }), fc.integer({ min: 1, max: MAX_WINDOW_HOURS }), fc.double({ min: 0, max: 1, noNaN: true }), (now, hours, share) => {
        const window = hourWindow(now, hours);
        expect(window.hours).toHaveLength(hours);
        const since = Date.parse(window.since);
        const stored = new Date(since + Math.floor(share * (now.getTime() - since))).toISOString();
        expect(stored >= window.since).toBe(true);
        expect(window.hours.filter((h) => h === hourKey(stored))).toHaveLength(1);
      }),
    );
  });
});

describe("lag bins", () => {
  it("start at 10 ms, grow by 2^(1/4) (19%, and a millisecond of rounding), and reach past a week", () => {
    expect(LAG_BIN_EDGES_MS[0]).toBe(10);
    for (let i = 1; i < LAG_BIN_EDGES_MS.length; i++) {
      const [lower, upper] = [LAG_BIN_EDGES_MS[i - 1] ?? 0, LAG_BIN_EDGES_MS[i] ?? 0];
      expect(upper).toBeGreaterThan(lower);
      // Each end is rounded to the millisecond, so the width may be off by one either way.
      expect(upper - lower).toBeLessThanOrEqual((lower + 0.5) * (2 ** (1 / 4) - 1) + 1);
    }
    expect(LAG_BIN_EDGES_MS.at(-1)).toBeGreaterThan(7 * 24 * 3_600_000);
  });
});

describe("lagSeries", () => {
  it("gives each hour with boundaries its count, the median's bin maximum and the slowest, oldest hour first", () => {
    const lags = [
      { hour: "2026-12-01T18", lagMs: 100, shard: 0 },
      { hour: "2026-12-01T18", lagMs: 200, shard: 1 },
      { hour: "2026-12-01T18", lagMs: 5_000, shard: 0 },
      { hour: "2026-12-01T17", lagMs: 60_000, shard: 1 },
    ];
    expect(lagSeries(cellsOf(lags))).toEqual([
      { hour: "2026-12-01T17", settled: 1, p50Ms: 60_000, maxMs: 60_000 },
      { hour: "2026-12-01T18", settled: 3, p50Ms: 200, maxMs: 5_000 },
    ]);
    expect(lagSeries([])).toEqual([]);
  });

  it("takes the lower median of an even count", () => {
    const lags = [1_000, 2_000, 30_000, 40_000].map((lagMs, shard) => ({ hour: "2026-12-01T18", lagMs, shard }));
    expect(lagSeries(cellsOf(lags))[0]?.p50Ms).toBe(2_000);
  });

  it("is never below the true median, at most one bin above it, and exact at the maximum, however the lags are spread over shards", () => {
    const sample = fc.record({ hour: fc.constantFrom("2026-12-01T17", "2026-12-01T18"), lagMs: fc.integer({ min: 0, max: 10_000_000 }), shard: fc.integer({ min: 0, max: 3 }) });
    fc.assert(
      fc.property(fc.array(sample, { minLength: 1, maxLength: 60 }), (lags) => {
        for (const point of lagSeries(cellsOf(lags))) {
          const sorted = lags.filter((l) => l.hour === point.hour).map((l) => l.lagMs).sort((a, b) => a - b);
          const median = sorted[Math.ceil(sorted.length / 2) - 1] ?? -1;
          expect(point.settled).toBe(sorted.length);
          expect(point.maxMs).toBe(sorted.at(-1));
          expect(sorted).toContain(point.p50Ms);
          expect(point.p50Ms).toBeGreaterThanOrEqual(median);
          expect(binOf(point.p50Ms)).toBe(binOf(median));
        }
        // One shard or many: the same series.
        expect(lagSeries(cellsOf(lags.map((l) => ({ ...l, shard: 0 }))))).toEqual(lagSeries(cellsOf(lags)));
      }),
    );
  });
});

describe("failureSeries", () => {
  it("adds the shards' cells per hour and kind, kinds in the given order, oldest hour first", () => {
    const cells: FailureCell[] = [
      { hour: "2026-12-01T18", kind: "resolver_failure", incidents: 1, occurrences: 10 },
      { hour: "2026-12-01T18", kind: "compactor_failure", incidents: 2, occurrences: 2 },
      { hour: "2026-12-01T18", kind: "resolver_failure", incidents: 1, occurrences: 1 },
      { hour: "2026-12-01T16", kind: "wake_failure", incidents: 1, occurrences: 3 },
    ];
    expect(failureSeries(cells, ["compactor_failure", "resolver_failure", "wake_failure"])).toEqual([
      { hour: "2026-12-01T16", incidents: 1, kinds: [{ kind: "wake_failure", incidents: 1, occurrences: 3 }] },
      {
        hour: "2026-12-01T18",
        incidents: 4,
        kinds: [
          { kind: "compactor_failure", incidents: 2, occurrences: 2 },
          { kind: "resolver_failure", incidents: 2, occurrences: 11 },
        ],
      },
    ]);
    expect(failureSeries([], ["compactor_failure"])).toEqual([]);
  });
});

describe("busiest", () => {
  it("keeps the most events across shards, ties to the smaller id", () => {
    const row = (conversationId: string, events: number, shard: string) => ({ conversationId, shard, events, lastRecordedAt: "2026-12-01T18:00:00.000Z" });
    const lists = [
      [row("api:b", 9, "DB_SHARD_0"), row("api:d", 2, "DB_SHARD_0")],
      [row("api:c", 9, "DB_SHARD_1"), row("api:a", 12, "DB_SHARD_1")],
      [],
    ];
    expect(busiest(lists, 3).map((b) => [b.conversationId, b.events, b.shard])).toEqual([
      ["api:a", 12, "DB_SHARD_1"],
      ["api:b", 9, "DB_SHARD_0"],
      ["api:c", 9, "DB_SHARD_1"],
    ]);
    expect(busiest([[], []], 20)).toEqual([]);
  });
});
