import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { renderEnvelope, renderTurn } from "../../src/core/render";
import type { ContextManifest, ContextSelection } from "../../src/durable/stub";
import { contextBarGeometry, contextComposition } from "../../src/http/inspector/context-bar";

const RUNS = { numRuns: 300 };

function manifest(overrides: { boundaryChars: number | null; amendmentChars: number | null; reservedMessages: number; tailChars: number; totalChars: number; messages: number }): ContextManifest {
  return {
    conversationId: "api:bar",
    agentId: "concierge",
    epochId: "epoch",
    boundary:
      overrides.boundaryChars === null
        ? null
        : {
            id: "bnd_1",
            hash: "0".repeat(64),
            position: 1,
            coveredThroughSeq: 10,
            coveredThroughTurnId: "s10",
            runId: "cmp_1",
            model: { provider: "foldline-extractive", model: "foldline-extractive-1" },
            envelopeChars: overrides.boundaryChars,
          },
    amendment:
      overrides.amendmentChars === null ? null : { hash: "1".repeat(64), envelopeChars: overrides.amendmentChars, items: [], content: "" },
    withheld: null,
    tail: { turns: 2, chars: overrides.tailChars, firstTurnId: "s11", lastTurnId: "p11", turnIdsHash: "2".repeat(64) },
    omitted: { groups: 0, chars: 0, throughGroup: null },
    reserved: { chars: (overrides.boundaryChars ?? 0) + (overrides.amendmentChars ?? 0), messages: overrides.reservedMessages },
    totals: { chars: overrides.totalChars, messages: overrides.messages },
    policy: { maxChars: 120_000, maxMessages: 400, maxAmendmentChars: 16_000 },
  };
}

describe("contextComposition", () => {
  it("takes envelope sizes from the manifest and counts the tail from the messages after them", () => {
    const boundary = renderEnvelope("boundary", "The team chose Lisbon.");
    const amendment = renderEnvelope("amendment", "Message 3 was edited.");
    const tail = [renderTurn({ role: "user", author: { id: "u1", name: "Ada" }, text: "And the dates?" }), { role: "assistant" as const, content: "May 4–6." }];
    const tailChars = tail.reduce((n, m) => n + m.content.length, 0);
    const total = boundary.content.length + amendment.content.length + tailChars;
    const selection: ContextSelection = {
      messages: [boundary, amendment, ...tail],
      manifest: manifest({ boundaryChars: boundary.content.length, amendmentChars: amendment.content.length, reservedMessages: 2, tailChars, totalChars: total, messages: 4 }),
    };
    const composition = contextComposition(selection);
    expect(composition).toEqual({ boundary: boundary.content.length, amendment: amendment.content.length, tail: tailChars });
    expect(composition.boundary + composition.amendment + composition.tail).toBe(selection.manifest.totals.chars);
  });

  it("is all tail when there is no boundary and no amendment", () => {
    const tail = [renderTurn({ role: "user", author: { id: "u1", name: "Ada" }, text: "hi" })];
    const selection: ContextSelection = {
      messages: tail,
      manifest: manifest({ boundaryChars: null, amendmentChars: null, reservedMessages: 0, tailChars: 8, totalChars: 8, messages: 1 }),
    };
    expect(contextComposition(selection)).toEqual({ boundary: 0, amendment: 0, tail: "Ada: hi".length });
  });
});

describe("contextBarGeometry", () => {
  it.each([
    {
      name: "below the trigger: the trigger line sets the scale",
      composition: { boundary: 600, amendment: 0, tail: 500 },
      policy: { triggerInputChars: 2_000, retainInputChars: 800 },
      scale: 2_200,
      segments: [
        ["boundary", 0, 27.27],
        ["amendment", 27.27, 0],
        ["tail", 27.27, 22.73],
      ],
      lines: [
        ["retain", 36.36],
        ["trigger", 90.91],
      ],
    },
    {
      name: "past the trigger: the context sets the scale and still fits",
      composition: { boundary: 1_000, amendment: 500, tail: 3_500 },
      policy: { triggerInputChars: 2_000, retainInputChars: 800 },
      scale: 5_500,
      segments: [
        ["boundary", 0, 18.18],
        ["amendment", 18.18, 9.09],
        ["tail", 27.27, 63.64],
      ],
      lines: [
        ["retain", 14.55],
        ["trigger", 36.36],
      ],
    },
  ])("$name", ({ composition, policy, scale, segments, lines }) => {
    const geometry = contextBarGeometry(composition, policy);
    expect(geometry.totalChars).toBe(composition.boundary + composition.amendment + composition.tail);
    expect(geometry.scaleChars).toBe(scale);
    expect(geometry.segments.map((s) => [s.kind, s.offsetPercent, s.widthPercent])).toEqual(segments);
    expect(geometry.lines.map((l) => [l.kind, l.percent])).toEqual(lines);
    expect(geometry.lines.map((l) => l.chars)).toEqual([policy.retainInputChars, policy.triggerInputChars]);
  });

  it("draws an empty context as an empty bar, never dividing by zero", () => {
    const geometry = contextBarGeometry({ boundary: 0, amendment: 0, tail: 0 }, { triggerInputChars: 100, retainInputChars: 0 });
    expect(geometry.totalChars).toBe(0);
    expect(geometry.segments.every((s) => s.widthPercent === 0 && s.offsetPercent === 0)).toBe(true);
    expect(geometry.lines.map((l) => l.percent)).toEqual([0, 90.91]);
  });

  it("keeps every segment and line on the bar, in order, with the characters given", () => {
    const chars = fc.integer({ min: 0, max: 3_000_000 });
    fc.assert(
      fc.property(chars, chars, chars, fc.integer({ min: 100, max: 2_000_000 }), fc.double({ min: 0, max: 0.999, noNaN: true }), (boundary, amendment, tail, trigger, retainShare) => {
        const retain = Math.floor(trigger * retainShare);
        const geometry = contextBarGeometry({ boundary, amendment, tail }, { triggerInputChars: trigger, retainInputChars: retain });
        expect(geometry.segments.map((s) => s.chars)).toEqual([boundary, amendment, tail]);
        expect(geometry.totalChars).toBe(boundary + amendment + tail);
        expect(geometry.scaleChars).toBeGreaterThanOrEqual(Math.max(geometry.totalChars, trigger));
        const [first, second, third] = geometry.segments;
        expect(first?.offsetPercent).toBe(0);
        // Each segment starts where the previous one ends (to the hundredth the widths are rounded to).
        expect(Math.abs((first?.offsetPercent ?? 0) + (first?.widthPercent ?? 0) - (second?.offsetPercent ?? 0))).toBeLessThan(0.011);
        expect(Math.abs((second?.offsetPercent ?? 0) + (second?.widthPercent ?? 0) - (third?.offsetPercent ?? 0))).toBeLessThan(0.011);
        const end = (third?.offsetPercent ?? 0) + (third?.widthPercent ?? 0);
        expect(end).toBeLessThanOrEqual(100);
        for (const s of geometry.segments) expect(s.widthPercent).toBeGreaterThanOrEqual(0);
        for (const l of geometry.lines) {
          expect(l.percent).toBeGreaterThanOrEqual(0);
          expect(l.percent).toBeLessThanOrEqual(100);
        }
        const [retainLine, triggerLine] = geometry.lines;
        expect(retainLine?.percent ?? 0).toBeLessThanOrEqual(triggerLine?.percent ?? 0);
      }),
      RUNS,
    );
  });
});
