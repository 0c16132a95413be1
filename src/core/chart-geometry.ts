/**
 * The geometry of the inspector's charts, pure: where a bar, a point or a tick goes in an SVG
 * drawn on the server. The views only turn these numbers into elements, so the numbers are tested
 * here and the page carries no script to compute them.
 */

/** The drawing's size in SVG user units, and the margins around its plot area (axis labels go there). */
export interface Frame {
  readonly width: number;
  readonly height: number;
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}

/** Wide enough for a week of hourly bars, short enough for two charts in one screen. */
export const CHART_FRAME: Frame = { width: 760, height: 190, left: 64, right: 12, top: 10, bottom: 26 };

/** Coordinates are rounded to tenths: finer than a pixel at the chart's size, short in the markup. */
const tenths = (value: number): number => Math.round(value * 10) / 10;

const plotWidth = (frame: Frame): number => frame.width - frame.left - frame.right;
const plotHeight = (frame: Frame): number => frame.height - frame.top - frame.bottom;

/** The y coordinate of the plot's bottom edge (the value 0). */
export const baseline = (frame: Frame): number => frame.height - frame.bottom;

/**
 * The smallest 1, 2 or 5 times a power of ten at or above `value` (1 for nothing to show), so the
 * axis ends on a round number and the largest value reaches at least two fifths of the way up.
 */
export function niceCeiling(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 5, 10].find((m) => m * power >= value) ?? 10;
  return step * power;
}

/** The axis end for counts: four equal steps of a whole number each (4, 8, 20, 40, 80, 200, …). */
export const countCeiling = (value: number): number => 4 * Math.max(1, niceCeiling(value / 4));

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Steps a duration axis is ticked in: each a round number of its own unit. */
const DURATION_STEPS = [1, 2, 5, 10, 20, 50, 100, 250, 500, SECOND, 2 * SECOND, 5 * SECOND, 15 * SECOND, 30 * SECOND, MINUTE, 2 * MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR, 48 * HOUR];

/**
 * The axis end for durations in milliseconds: four equal steps, each a round number of seconds,
 * minutes or hours (a minute is four steps of 15 s, not 1.67 minutes of a decimal scale).
 */
export function durationCeiling(ms: number): number {
  const step = DURATION_STEPS.find((s) => 4 * s >= ms);
  return step === undefined ? countCeiling(ms) : 4 * step;
}

/** The y coordinate of `value` on an axis from 0 to `scale`; values beyond the scale stay inside the plot. */
export function yOf(value: number, scale: number, frame: Frame): number {
  const share = Math.min(1, Math.max(0, value / scale));
  return tenths(baseline(frame) - share * plotHeight(frame));
}

/** Four equal steps from 0 to `scale`, each with its y coordinate. */
export function ticks(scale: number, frame: Frame): { readonly value: number; readonly y: number }[] {
  return [0, 1, 2, 3, 4].map((i) => ({ value: (scale * i) / 4, y: yOf((scale * i) / 4, scale, frame) }));
}

/** One slot of a category axis: where its bar goes and where its label is centred. */
export interface Slot {
  readonly key: string;
  readonly x: number;
  readonly width: number;
  readonly center: number;
}

/** Bars take this share of their slot: the gap between them shows where one hour ends. */
const BAR_SHARE = 0.7;

/** The plot's width split into one slot per key, in order, each bar centred in its slot. */
export function slots(keys: readonly string[], frame: Frame): Slot[] {
  const slot = plotWidth(frame) / Math.max(1, keys.length);
  const width = slot * BAR_SHARE;
  return keys.map((key, i) => {
    const center = frame.left + slot * (i + 0.5);
    return { key, x: tenths(center - width / 2), width: tenths(width), center: tenths(center) };
  });
}

export interface Rect {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** A bar in `slot` from the value `from` up to `to` (a stacked segment starts where the one below ends). */
export function bar(slot: Slot, from: number, to: number, scale: number, frame: Frame): Rect {
  const top = yOf(to, scale, frame);
  return { x: slot.x, y: top, width: slot.width, height: tenths(yOf(from, scale, frame) - top) };
}

/**
 * Labels for a category axis of hour keys (`2026-12-01T19`): at most `most` of them, evenly spaced
 * from the oldest, each `HH:00`, with the date in front of the first and of any that starts a new day.
 */
export function hourLabels(slotsOfHours: readonly Slot[], most: number): { readonly center: number; readonly text: string }[] {
  const step = Math.max(1, Math.ceil(slotsOfHours.length / most));
  let lastDay = "";
  return slotsOfHours
    .filter((_, i) => i % step === 0)
    .map((slot) => {
      const day = slot.key.slice(5, 10);
      const text = day === lastDay ? `${slot.key.slice(11, 13)}:00` : `${day} ${slot.key.slice(11, 13)}:00`;
      lastDay = day;
      return { center: slot.center, text };
    });
}

/** The x coordinate of `value` on a linear axis across the plot from `min` to `max`. */
export function xOf(value: number, min: number, max: number, frame: Frame): number {
  const share = max > min ? (value - min) / (max - min) : 0.5;
  return tenths(frame.left + share * plotWidth(frame));
}

/** An SVG `points` attribute: each (x, y) pair as `x,y`, separated by spaces. */
export const pointsAttribute = (points: readonly { readonly x: number; readonly y: number }[]): string => points.map((p) => `${p.x},${p.y}`).join(" ");

/**
 * A value that changes at some x and holds until the next as a step line: a horizontal run to each
 * new x, then the jump, so a changed threshold is drawn where it changed rather than as a slope.
 */
export function stepPoints(points: readonly { readonly x: number; readonly y: number }[]): { x: number; y: number }[] {
  return points.flatMap((p, i) => {
    const before = points[i - 1];
    return before === undefined || before.y === p.y ? [p] : [{ x: p.x, y: before.y }, p];
  });
}

/** A chain's active context size as of one source, as its compactor's preflight measured it. */
export interface SizeSample {
  /** The source the size was measured as of. */
  readonly seq: number;
  readonly activeChars: number;
  /** The trigger a skip was weighed against; a plan's run event does not repeat it (null). */
  readonly triggerChars: number | null;
  readonly planned: boolean;
}

export interface SizeChartGeometry {
  readonly scale: number;
  readonly active: readonly { readonly x: number; readonly y: number }[];
  /** The trigger as a step line (empty when no sample and no policy names one). */
  readonly trigger: readonly { readonly x: number; readonly y: number }[];
  /** The samples that planned a compaction, where the size drops after its boundary settles. */
  readonly plans: readonly { readonly x: number; readonly y: number; readonly seq: number; readonly chars: number }[];
}

/**
 * The active size against the trigger over the log's sequence numbers. A sample without its own
 * trigger (a plan) holds the one before it, or `policyTrigger` (the current declaration's) when it
 * comes first: the trigger changes only when a declaration does.
 */
export function sizeChartGeometry(samples: readonly SizeSample[], policyTrigger: number | undefined, frame: Frame): SizeChartGeometry {
  let held = policyTrigger;
  const triggers = samples.map((s) => (held = s.triggerChars ?? held));
  const scale = countCeiling(Math.max(0, ...samples.map((s) => s.activeChars), ...triggers.map((t) => t ?? 0)));
  const first = samples[0]?.seq ?? 0;
  const last = samples.at(-1)?.seq ?? 0;
  const at = (seq: number, chars: number) => ({ x: xOf(seq, first, last, frame), y: yOf(chars, scale, frame) });
  const trigger = samples.flatMap((s, i) => {
    const chars = triggers[i];
    return chars === undefined ? [] : [at(s.seq, chars)];
  });
  return {
    scale,
    active: samples.map((s) => at(s.seq, s.activeChars)),
    trigger: stepPoints(trigger),
    plans: samples.filter((s) => s.planned).map((s) => ({ ...at(s.seq, s.activeChars), seq: s.seq, chars: s.activeChars })),
  };
}

/** A duration for an axis or a tooltip: ms under a second, then s, min and h with one decimal at most. */
export function durationLabel(ms: number): string {
  const one = (value: number): string => String(Math.round(value * 10) / 10);
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${one(ms / 1_000)} s`;
  if (ms < 3_600_000) return `${one(ms / 60_000)} min`;
  return `${one(ms / 3_600_000)} h`;
}

/** A count for an axis: whole numbers as they are, thousands as `k` with one decimal at most. */
export function countLabel(value: number): string {
  if (value >= 1_000) return `${Math.round(value / 100) / 10}k`;
  return String(Math.round(value * 100) / 100);
}
