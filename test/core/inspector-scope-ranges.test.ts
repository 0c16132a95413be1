import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { scopesAllow } from "../../src/core/conversation-id";
import type { ScopeRange } from "../../src/storage/inspector-store";
import { scopeRanges } from "../../src/storage/inspector-store";

/** What the SQL of one range selects. For ASCII ids JavaScript's order is SQLite's byte order. */
function selects(range: ScopeRange, id: string): boolean {
  if (range.kind === "exact") return id === range.id;
  return id >= range.from && (range.to === null || id < range.to);
}

const start = (r: ScopeRange): string => (r.kind === "exact" ? r.id : r.from);

describe("scopeRanges", () => {
  it.each<[string, string[], ScopeRange[]]>([
    ["* is every id", ["*"], [{ kind: "prefix", from: "", to: null }]],
    ["* swallows everything else", ["api:a", "*", "telegram:1:*"], [{ kind: "prefix", from: "", to: null }]],
    ["a prefix is a half-open range", ["api:acme:*"], [{ kind: "prefix", from: "api:acme:", to: "api:acme;" }]],
    ["an exact id stays exact", ["telegram:1:2"], [{ kind: "exact", id: "telegram:1:2" }]],
    [
      "nested prefixes and covered ids collapse into the widest prefix",
      ["api:acme:team:*", "api:acme:*", "api:acme:x", "api:acme:*"],
      [{ kind: "prefix", from: "api:acme:", to: "api:acme;" }],
    ],
    [
      "disjoint scopes come back sorted",
      ["telegram:9:*", "api:b", "api:a:*", "api:b"],
      [
        { kind: "prefix", from: "api:a:", to: "api:a;" },
        { kind: "exact", id: "api:b" },
        { kind: "prefix", from: "telegram:9:", to: "telegram:9;" },
      ],
    ],
    ["a non-ASCII prefix reaches no conversation id, so it yields no range", ["api:é*"], []],
    ["agent scopes translate too (and match no conversation id)", ["agent:*"], [{ kind: "prefix", from: "agent:", to: "agent;" }]],
  ])("%s", (_name, patterns, ranges) => {
    expect(scopeRanges(patterns)).toEqual(ranges);
  });

  it("selects exactly the ids the scopes allow, in disjoint sorted ranges", () => {
    // A small alphabet so that prefixes, ids and near misses collide often.
    const text = fc.string({ unit: fc.constantFrom("a", "b", ":", "z", "~", "\x7f"), maxLength: 5 });
    const pattern = fc.oneof(text, text.map((t) => `${t}*`));
    fc.assert(
      fc.property(fc.array(pattern, { minLength: 1, maxLength: 6 }), fc.array(text, { maxLength: 20 }), (patterns, ids) => {
        const ranges = scopeRanges(patterns);
        for (const id of [...ids, ...patterns.map((p) => p.replace(/\*$/, ""))]) {
          const hits = ranges.filter((r) => selects(r, id)).length;
          expect(hits).toBe(scopesAllow(patterns, id) ? 1 : 0);
        }
        for (let i = 1; i < ranges.length; i++) {
          const previous = ranges[i - 1];
          const current = ranges[i];
          if (previous === undefined || current === undefined) continue;
          expect(start(previous) < start(current)).toBe(true);
          // The previous range ends before the next one starts.
          const end = previous.kind === "exact" ? previous.id : previous.to;
          if (end !== null) expect(previous.kind === "exact" ? end < start(current) : end <= start(current)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});
