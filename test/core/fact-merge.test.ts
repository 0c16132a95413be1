import { describe, expect, it } from "vitest";
import type { ExtractedFact } from "../../src/core/fact-extraction";
import { factsByPage, MAX_KEYS_PER_PAGE, MAX_PREVIOUS, mergeFacts, parsePage, renderPage } from "../../src/core/fact-merge";

/**
 * The extracted page's text format and merge rule, line by line: the header, one block per key with
 * its superseded statements, what a page keeps when it is full, and what a batch that would push its
 * own facts off the page applies.
 */

const PATH = "extracted/plans/offsite";
const hash = (n: number): string => n.toString(16).padStart(12, "0").padEnd(64, "f");
const fact = (key: string, statement: string, n: number, page = PATH): ExtractedFact => ({ page, key, statement, sources: [{ messageId: `m${n}`, seq: n, eventHash: hash(n) }] });
const ref = (n: number): string => n.toString(16).padStart(12, "0");

describe("the page format", () => {
  it("is a header, then per key its current statement and the ones it superseded, each with its message and ref", () => {
    const v1 = mergeFacts(PATH, undefined, [fact("date", "The offsite is on May 3.", 1), fact("venue", "Casa Novak (booked)", 2)]);
    const v2 = mergeFacts(PATH, v1.content, [fact("date", "The offsite moved to May 10.", 3)]);
    expect(v2.content).toBe(
      [
        `Extracted memory ${PATH}: facts taken from conversation history, newest value first.`,
        `- venue: Casa Novak (booked) (msg m2, ref ${ref(2)})`,
        `- date: The offsite moved to May 10. (msg m3, ref ${ref(3)})`,
        `  previously: The offsite is on May 3. (msg m1, ref ${ref(1)})`,
      ].join("\n"),
    );
    expect(renderPage(PATH, parsePage(v2.content))).toBe(v2.content);
  });

  it("reads only the lines in its format: stray text and a 'previously' before any entry are ignored", () => {
    const text = [`  previously: orphan (msg m0, ref ${ref(0)})`, "Some note a person typed.", `- date: May 3 (msg m1, ref ${ref(1)})`, "- broken line without a ref", `  previously: May 1 (msg m0, ref ${ref(0)})`].join("\n");
    const entries = parsePage(text);
    expect([...entries.keys()]).toEqual(["date"]);
    expect(entries.get("date")).toEqual({ current: { statement: "May 3", messageId: "m1", ref: ref(1) }, previous: [{ statement: "May 1", messageId: "m0", ref: ref(0) }] });
  });

  it("shows a message id on one line, without the characters its suffix is parsed by", () => {
    const odd: ExtractedFact = { ...fact("date", "May 3", 1), sources: [{ messageId: "a(b), c\nd", seq: 1, eventHash: hash(1) }] };
    expect(mergeFacts(PATH, undefined, [odd]).content.split("\n")[1]).toBe(`- date: May 3 (msg a_b__ c d, ref ${ref(1)})`);
  });
});

describe("mergeFacts", () => {
  it("changes nothing for an existing page when no fact applies, and writes a header-only page for none at all", () => {
    const v1 = mergeFacts(PATH, undefined, [fact("date", "May 3", 1)]);
    expect(mergeFacts(PATH, v1.content, [fact("date", "May 3", 1)])).toEqual({ content: v1.content, changed: false, applied: [] });
    expect(mergeFacts(PATH, undefined, [])).toEqual({ content: `Extracted memory ${PATH}: facts taken from conversation history, newest value first.`, changed: true, applied: [] });
    // Facts of another page are not this page's.
    expect(mergeFacts(PATH, v1.content, [fact("date", "May 9", 9, "extracted/plans/other")]).applied).toEqual([]);
  });

  it(`keeps ${MAX_KEYS_PER_PAGE} keys, dropping the one nothing has updated longest, and an update keeps a key`, () => {
    const keys = Array.from({ length: MAX_KEYS_PER_PAGE }, (_, i) => fact(`k${i}`, `value ${i}`, i + 1));
    const full = mergeFacts(PATH, undefined, keys).content;
    const touched = mergeFacts(PATH, full, [fact("k0", "value 0 again", 100)]).content;
    const next = mergeFacts(PATH, touched, [fact("new", "a new key", 101)]);
    const kept = [...parsePage(next.content).keys()];
    expect(kept).toHaveLength(MAX_KEYS_PER_PAGE);
    expect(kept).not.toContain("k1");
    expect(kept.slice(-2)).toEqual(["k0", "new"]);
  });

  it("applies of one batch only what stays on the page: per key the last ones it keeps, of the last keys it holds", () => {
    const updates = Array.from({ length: MAX_PREVIOUS + 3 }, (_, i) => fact("date", `May ${i + 1}`, i + 1));
    const merged = mergeFacts(PATH, undefined, updates);
    expect(merged.applied.map((f) => f.statement)).toEqual(updates.slice(-(MAX_PREVIOUS + 1)).map((f) => f.statement));
    const entry = parsePage(merged.content).get("date");
    expect(entry?.current.statement).toBe(`May ${MAX_PREVIOUS + 3}`);
    expect(entry?.previous.map((p) => p.statement)).toEqual([`May ${MAX_PREVIOUS + 2}`, `May ${MAX_PREVIOUS + 1}`, `May ${MAX_PREVIOUS}`]);

    const many = Array.from({ length: MAX_KEYS_PER_PAGE + 2 }, (_, i) => fact(`k${i}`, `value ${i}`, i + 1));
    const wide = mergeFacts(PATH, undefined, [...many, fact("k0", "value 0 later", 200)]);
    // k1 and k2 were last said earliest and would fall off at once; k0 was said again last, so it stays.
    expect(wide.applied.map((f) => f.key)).not.toContain("k1");
    expect(wide.applied.map((f) => f.key)).not.toContain("k2");
    expect(wide.applied.filter((f) => f.key === "k0").map((f) => f.statement)).toEqual(["value 0", "value 0 later"]);
    // Merged again, the batch changes nothing.
    expect(mergeFacts(PATH, wide.content, [...many, fact("k0", "value 0 later", 200)]).changed).toBe(false);
  });
});

describe("factsByPage", () => {
  it("groups facts by page in first-mention order, each page's facts in slice order", () => {
    const a1 = fact("x", "one", 1, "extracted/plans/a");
    const b1 = fact("y", "two", 2, "extracted/plans/b");
    const a2 = fact("z", "three", 3, "extracted/plans/a");
    expect([...factsByPage([a1, b1, a2])]).toEqual([
      ["extracted/plans/a", [a1, a2]],
      ["extracted/plans/b", [b1]],
    ]);
  });
});
