import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RecalledPageHit, RecalledTurnHit, RecallHit } from "../../src/core/recall";
import { memoryManifest, mergeHits, packMemory, renderRecalled } from "../../src/core/recall";
import { renderEnvelope } from "../../src/core/render";

const page = (path: string, content: string, rank: number): RecalledPageHit => ({ type: "page", path, version: 1, contentHash: "0".repeat(64), content, snippet: content, rank });
const turn = (seq: number, content: string, rank: number): RecalledTurnHit => ({
  type: "turn",
  role: "user",
  messageId: `m${seq}`,
  seq,
  authorId: "u1",
  authorName: "Ada",
  content,
  snippet: content,
  rank,
});

const FRAME = renderEnvelope("memory", "").content.length;

describe("packMemory", () => {
  it("keeps the whole envelope within the budget, skipping a hit that does not fit for a smaller one further down", () => {
    const big = page("big", "x".repeat(500), -3);
    const small = page("small", "tiny fact", -2);
    const old = turn(4, "an old message", -1);
    const budget = FRAME + renderRecalled(small).length + 2 + renderRecalled(old).length;
    const pack = packMemory([big, small, old], budget);
    expect(pack.hits).toEqual([small, old]);
    expect(pack.envelope?.content.length).toBe(budget);
    expect(pack.envelope?.role).toBe("user");
    expect(memoryManifest(pack, budget)).toEqual({
      envelopeChars: budget,
      budgetChars: budget,
      pages: [{ path: "small", version: 1, contentHash: "0".repeat(64), chars: 9 }],
      turns: [{ turnId: "s4", messageId: "m4", seq: 4, chars: 14 }],
    });
  });

  it("serves nothing when nothing fits, and never exceeds any budget (escaping counted)", () => {
    expect(packMemory([page("a", "fact", 0)], FRAME)).toEqual({ hits: [], envelope: undefined });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ maxLength: 80 }), fc.boolean()), { maxLength: 8 }), fc.integer({ min: 0, max: 1_500 }), (items, budget) => {
        const hits: RecallHit[] = items.map(([text, isPage], i) => (isPage ? page(`p${i}`, text, i) : turn(i + 1, text, i)));
        const pack = packMemory(hits, budget);
        expect(pack.envelope?.content.length ?? 0).toBeLessThanOrEqual(budget);
        expect(pack.hits.length === 0).toBe(pack.envelope === undefined);
      }),
    );
  });
});

describe("mergeHits", () => {
  it("orders pages and turns by bm25 (lower first), ties pages first, and cuts at the limit", () => {
    const a = page("a", "a", -1);
    const b = turn(2, "b", -5);
    const c = page("c", "c", -5);
    expect(mergeHits([a, c], [b], 10)).toEqual([c, b, a]);
    expect(mergeHits([a, c], [b], 2)).toEqual([c, b]);
  });
});
