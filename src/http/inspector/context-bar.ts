import type { ContextSelection } from "../../durable/stub";
import { messageChars } from "../../core/render";

/**
 * The geometry of the context composition bar: what an agent is served (boundary envelope,
 * amendment envelope, exact tail), drawn against the compactor's trigger and retain lines. Pure,
 * so the page only turns numbers into CSS percentages and the numbers are tested here.
 */

export type SegmentKind = "boundary" | "amendment" | "tail";
export type LineKind = "trigger" | "retain";

export interface ContextComposition {
  readonly boundary: number;
  readonly amendment: number;
  readonly tail: number;
}

/**
 * Characters of each part of a served context. The envelopes' sizes are the manifest's; the tail
 * is counted from the messages after the envelopes (the manifest reserves their slots first), so
 * the three always add up to what the agent is actually sent.
 */
export function contextComposition(selection: ContextSelection): ContextComposition {
  const { manifest, messages } = selection;
  return {
    boundary: manifest.boundary?.envelopeChars ?? 0,
    amendment: manifest.amendment?.envelopeChars ?? 0,
    tail: messageChars(messages.slice(manifest.reserved.messages)),
  };
}

export interface BarSegment {
  readonly kind: SegmentKind;
  readonly chars: number;
  /** Where the segment starts and how wide it is, in percent of the bar. */
  readonly offsetPercent: number;
  readonly widthPercent: number;
}

export interface BarLine {
  readonly kind: LineKind;
  readonly chars: number;
  readonly percent: number;
}

export interface BarGeometry {
  readonly totalChars: number;
  /** The characters the full width of the bar stands for. */
  readonly scaleChars: number;
  readonly segments: readonly BarSegment[];
  readonly lines: readonly BarLine[];
}

/**
 * A tenth of room to the right of the furthest mark, so a line at the scale's end is not drawn on
 * the edge. Added as a division of integers, not a multiplication by 1.1, which is not exact.
 */
const withHeadroom = (chars: number): number => Math.ceil(chars + chars / 10);

const SEGMENT_ORDER: readonly SegmentKind[] = ["boundary", "amendment", "tail"];

/** Percentages are rounded to hundredths: finer than a pixel on any screen, short in the markup. */
const hundredths = (value: number): number => Math.round(value * 100) / 100;
const percentOf = (chars: number, scale: number): number => hundredths((chars / scale) * 100);

export function contextBarGeometry(composition: ContextComposition, policy: { readonly triggerInputChars: number; readonly retainInputChars: number }): BarGeometry {
  const totalChars = composition.boundary + composition.amendment + composition.tail;
  const scaleChars = Math.max(1, withHeadroom(Math.max(totalChars, policy.triggerInputChars, policy.retainInputChars)));
  let start = 0;
  const segments = SEGMENT_ORDER.map((kind): BarSegment => {
    const chars = composition[kind];
    // Offsets are computed from the running character count, not by adding rounded widths, so
    // rounding never accumulates along the bar.
    const offsetPercent = percentOf(start, scaleChars);
    const segment = { kind, chars, offsetPercent, widthPercent: hundredths(percentOf(start + chars, scaleChars) - offsetPercent) };
    start += chars;
    return segment;
  });
  const lines: BarLine[] = [
    { kind: "retain", chars: policy.retainInputChars, percent: percentOf(policy.retainInputChars, scaleChars) },
    { kind: "trigger", chars: policy.triggerInputChars, percent: percentOf(policy.triggerInputChars, scaleChars) },
  ];
  return { totalChars, scaleChars, segments, lines };
}
