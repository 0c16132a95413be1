import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Frame } from "../../src/core/chart-geometry";
import {
  CHART_FRAME,
  bar,
  baseline,
  countCeiling,
  countLabel,
  durationCeiling,
  durationLabel,
  hourLabels,
  niceCeiling,
  pointsAttribute,
  sizeChartGeometry,
  slots,
  stepPoints,
  ticks,
  xOf,
  yOf,
} from "../../src/core/chart-geometry";

const frame: Frame = { width: 200, height: 120, left: 20, right: 10, top: 10, bottom: 10 };

describe("axis ends", () => {
  it("round up to 1, 2 or 5 times a power of ten", () => {
    expect([0, -3, Number.NaN, 1, 1.1, 3, 7, 1_234, 0.03, 60_000].map(niceCeiling)).toEqual([1, 1, 1, 1, 2, 5, 10, 2_000, 0.05, 100_000]);
  });

  it("for counts, end on four whole steps", () => {
    expect([0, 1, 4, 5, 9, 30, 100].map(countCeiling)).toEqual([4, 4, 4, 8, 20, 40, 200]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), (n) => {
        const scale = countCeiling(n);
        expect(scale).toBeGreaterThanOrEqual(n);
        expect(Number.isInteger(scale / 4)).toBe(true);
      }),
    );
  });

  it("for durations, end on four steps of a round number of seconds, minutes or hours", () => {
    expect([0, 3, 1_140, 4_000, 60_000, 61_000, 2 * 3_600_000, 100 * 3_600_000].map(durationCeiling)).toEqual([4, 4, 2_000, 4_000, 60_000, 120_000, 2 * 3_600_000, 192 * 3_600_000]);
    expect(ticks(durationCeiling(60_000), frame).map((t) => durationLabel(t.value))).toEqual(["0 ms", "15 s", "30 s", "45 s", "1 min"]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 10 }), (ms) => {
        expect(durationCeiling(ms)).toBeGreaterThanOrEqual(ms);
      }),
    );
  });
});

describe("yOf and ticks", () => {
  it("puts 0 on the baseline, the scale at the top, and keeps values beyond it inside the plot", () => {
    expect(yOf(0, 10, frame)).toBe(baseline(frame));
    expect(baseline(frame)).toBe(110);
    expect(yOf(10, 10, frame)).toBe(10);
    expect(yOf(5, 10, frame)).toBe(60);
    expect(yOf(50, 10, frame)).toBe(10);
    expect(yOf(-1, 10, frame)).toBe(110);
    expect(ticks(8, frame)).toEqual([
      { value: 0, y: 110 },
      { value: 2, y: 85 },
      { value: 4, y: 60 },
      { value: 6, y: 35 },
      { value: 8, y: 10 },
    ]);
  });
});

describe("slots and bars", () => {
  it("split the plot into equal slots, each bar inside its own", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 168 }), (n) => {
        const keys = Array.from({ length: n }, (_, i) => String(i));
        const all = slots(keys, CHART_FRAME);
        expect(all.map((s) => s.key)).toEqual(keys);
        for (const [i, slot] of all.entries()) {
          expect(slot.x).toBeGreaterThanOrEqual(CHART_FRAME.left - 0.1);
          expect(slot.x + slot.width).toBeLessThanOrEqual(CHART_FRAME.width - CHART_FRAME.right + 0.1);
          const next = all[i + 1];
          if (next !== undefined) expect(slot.x + slot.width).toBeLessThan(next.x);
        }
      }),
    );
  });

  it("stacks segments without a gap or an overlap", () => {
    const [slot] = slots(["a"], frame);
    if (slot === undefined) throw new Error("one slot");
    expect(slot).toEqual({ key: "a", x: 45.5, width: 119, center: 105 });
    const lower = bar(slot, 0, 3, 8, frame);
    const upper = bar(slot, 3, 5, 8, frame);
    expect(lower).toEqual({ x: 45.5, y: 72.5, width: 119, height: 37.5 });
    expect(upper.y + upper.height).toBe(lower.y);
    expect(upper.height).toBe(25);
    expect(bar(slot, 0, 0, 8, frame).height).toBe(0);
  });
});

describe("hourLabels", () => {
  it("labels at most the asked number of hours, with the date on the first and where a day starts", () => {
    const hours = ["2026-11-30T21", "2026-11-30T22", "2026-11-30T23", "2026-12-01T00", "2026-12-01T01", "2026-12-01T02"];
    expect(hourLabels(slots(hours, frame), 6).map((l) => l.text)).toEqual(["11-30 21:00", "22:00", "23:00", "12-01 00:00", "01:00", "02:00"]);
    expect(hourLabels(slots(hours, frame), 3).map((l) => l.text)).toEqual(["11-30 21:00", "23:00", "12-01 01:00"]);
    const week = Array.from({ length: 168 }, (_, i) => new Date(Date.UTC(2026, 10, 24, i)).toISOString().slice(0, 13));
    expect(hourLabels(slots(week, CHART_FRAME), 8).length).toBeLessThanOrEqual(8);
  });
});

describe("lines", () => {
  it("places x linearly, a single point in the middle", () => {
    expect(xOf(0, 0, 10, frame)).toBe(20);
    expect(xOf(10, 0, 10, frame)).toBe(190);
    expect(xOf(5, 0, 10, frame)).toBe(105);
    expect(xOf(7, 7, 7, frame)).toBe(105);
  });

  it("draws a changed value as a step, and points as an SVG attribute", () => {
    const points = [
      { x: 0, y: 5 },
      { x: 10, y: 5 },
      { x: 20, y: 8 },
    ];
    expect(stepPoints(points)).toEqual([
      { x: 0, y: 5 },
      { x: 10, y: 5 },
      { x: 20, y: 5 },
      { x: 20, y: 8 },
    ]);
    expect(pointsAttribute(stepPoints(points))).toBe("0,5 10,5 20,5 20,8");
  });
});

describe("sizeChartGeometry", () => {
  const sample = (seq: number, activeChars: number, triggerChars: number | null, planned = false) => ({ seq, activeChars, triggerChars, planned });

  it("draws every sample, marks the plans, and holds the trigger a plan does not repeat", () => {
    const geometry = sizeChartGeometry([sample(2, 900, 2_000), sample(4, 2_100, null, true), sample(6, 1_200, 2_000), sample(8, 1_500, 3_000)], undefined, frame);
    expect(geometry.scale).toBe(4_000);
    expect(geometry.active.map((p) => p.x)).toEqual([20, 76.7, 133.3, 190]);
    expect(geometry.plans).toEqual([{ x: 76.7, y: yOf(2_100, 4_000, frame), seq: 4, chars: 2_100 }]);
    const triggerYs = geometry.trigger.map((p) => p.y);
    expect(new Set(triggerYs.slice(0, -1))).toEqual(new Set([yOf(2_000, 4_000, frame)]));
    expect(triggerYs.at(-1)).toBe(yOf(3_000, 4_000, frame));
  });

  it("starts from the declaration's trigger when the first sample names none, and draws none when nothing does", () => {
    expect(sizeChartGeometry([sample(3, 500, null, true)], 800, frame).trigger).toEqual([{ x: 105, y: yOf(800, 800, frame) }]);
    expect(sizeChartGeometry([sample(3, 500, null, true)], undefined, frame).trigger).toEqual([]);
    expect(sizeChartGeometry([], undefined, frame)).toEqual({ scale: 4, active: [], trigger: [], plans: [] });
  });
});

describe("labels", () => {
  it("names durations and counts briefly", () => {
    expect([0, 999.6, 1_000, 12_345, 90_000, 5_400_000].map(durationLabel)).toEqual(["0 ms", "1000 ms", "1 s", "12.3 s", "1.5 min", "1.5 h"]);
    expect([0, 2.5, 40, 1_000, 12_345].map(countLabel)).toEqual(["0", "2.5", "40", "1k", "12.3k"]);
  });
});
