import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ExtractedFact } from "../../src/core/fact-extraction";
import { oneLine } from "../../src/core/fact-extraction";
import { factsByPage, MAX_KEYS_PER_PAGE, MAX_PREVIOUS, mergeFacts, pageTermsText, parsePage, renderPage } from "../../src/core/fact-merge";

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
        `- venue: Casa Novak (booked) (msg m2, seq 2, ref ${ref(2)})`,
        `- date: The offsite moved to May 10. (msg m3, seq 3, ref ${ref(3)})`,
        `  previously: The offsite is on May 3. (msg m1, seq 1, ref ${ref(1)})`,
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
    expect(mergeFacts(PATH, undefined, [odd]).content.split("\n")[1]).toBe(`- date: May 3 (msg a_b__ c d, seq 1, ref ${ref(1)})`);
  });
});

describe("pageTermsText", () => {
  it("keeps each fact's key and statements, without the heading, 'previously:' or any line's source tag", () => {
    const v1 = mergeFacts(PATH, undefined, [fact("date", "The offsite is on May 3.", 1), fact("venue", "Casa Novak (booked)", 2)]);
    const v2 = mergeFacts(PATH, v1.content, [fact("date", "The offsite moved to May 10.", 3)]);
    expect(pageTermsText(v2.content)).toBe(["- venue: Casa Novak (booked)", "- date: The offsite moved to May 10.", "The offsite is on May 3."].join("\n"));
    // A line written before seqs were recorded loses its tag too.
    expect(pageTermsText(`- date: May 3 (msg m1, ref ${ref(1)})`)).toBe("- date: May 3");
  });

  it("leaves whole what is not the format: a first line that is not the heading, the heading's words later on, a statement's own parentheses", () => {
    const text = ["Some note a person typed (msg 1).", `Extracted memory ${PATH}: facts taken from conversation history, newest value first.`, "- venue: Casa Novak (booked)", "  previously: with two spaces, and (msg m1, seq 2, ref zz)"].join("\n");
    expect(pageTermsText(text)).toBe(["Some note a person typed (msg 1).", `Extracted memory ${PATH}: facts taken from conversation history, newest value first.`, "- venue: Casa Novak (booked)", "with two spaces, and (msg m1, seq 2, ref zz)"].join("\n"));
    expect(pageTermsText(`Extracted memory ${PATH}: facts taken from conversation history, newest value first. And more.`)).toBe(`Extracted memory ${PATH}: facts taken from conversation history, newest value first. And more.`);
    expect(pageTermsText(`Extracted memory ${PATH}: facts taken from conversation history, newest value first.`)).toBe("");
    expect(pageTermsText("- note: she wrote  previously: nothing")).toBe("- note: she wrote  previously: nothing");
  });

  it("never gives a word its page does not hold", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("date", "venue", "budget"), fc.string({ minLength: 1, maxLength: 40 }).map((t) => oneLine(t) || "x")), { minLength: 1, maxLength: 8 }), (said) => {
        const page = mergeFacts(PATH, undefined, said.map(([key, statement], i) => fact(key, statement, i + 1))).content;
        const words = new Set(page.split(/\s+/));
        for (const word of pageTermsText(page).split(/\s+/).filter(Boolean)) expect(words.has(word) || page.includes(word)).toBe(true);
      }),
    );
  });
});

describe("mergeFacts", () => {
  it("changes nothing for an existing page when no fact applies, and writes a header-only page for none at all", () => {
    const v1 = mergeFacts(PATH, undefined, [fact("date", "May 3", 1)]);
    expect(mergeFacts(PATH, v1.content, [fact("date", "May 3", 1)])).toEqual({ content: v1.content, changed: false, applied: [], current: new Map() });
    expect(mergeFacts(PATH, undefined, [])).toEqual({ content: `Extracted memory ${PATH}: facts taken from conversation history, newest value first.`, changed: true, applied: [], current: new Map() });
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

  it("keeps a key the batch speaks of when the page is full, though nothing in the batch applied to it", () => {
    const full = mergeFacts(PATH, undefined, Array.from({ length: MAX_KEYS_PER_PAGE }, (_, i) => fact(`k${i}`, `value ${i}`, i + 1))).content;
    // k0 is the key updated longest ago; the batch restates its value (already on the page) and adds a key.
    const batch = [fact("k0", "value 0", 1), fact("new", "a new key", 100)];
    const merged = mergeFacts(PATH, full, batch);
    const kept = [...parsePage(merged.content).keys()];
    expect(kept).toHaveLength(MAX_KEYS_PER_PAGE);
    expect(kept).toContain("k0");
    expect(kept).not.toContain("k1");
    // Dropped, k0 would come back as a new key on every replay of the batch.
    expect(mergeFacts(PATH, merged.content, batch).changed).toBe(false);
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

describe("mergeFacts in message order", () => {
  const said = (n: number, statement: string, key = "budget", messageId = `m${n}`): ExtractedFact => ({ page: PATH, key, statement, sources: [{ messageId, seq: n, eventHash: hash(n) }] });
  const lines = (content: string, key = "budget") => {
    const entry = parsePage(content).get(key);
    return entry === undefined ? [] : [entry.current, ...entry.previous].map((line) => [line.statement, line.seq]);
  };

  it("keeps the value of the latest message current when an older slice's facts are merged after a newer one's", () => {
    const newer = mergeFacts(PATH, undefined, [said(80, "budget is 5k")]);
    const late = mergeFacts(PATH, newer.content, [said(50, "budget is 4k")]);
    expect(late.changed).toBe(true);
    expect(lines(late.content)).toEqual([["budget is 5k", 80], ["budget is 4k", 50]]);
    expect(late.applied.map((f) => f.statement)).toEqual(["budget is 4k"]);
    expect(late.current).toEqual(new Map());
    // Merged again, it changes nothing.
    expect(mergeFacts(PATH, late.content, [said(50, "budget is 4k")]).changed).toBe(false);
  });

  it("keeps the superseded values in message order, newest first, whatever order they arrived in", () => {
    let content: string | undefined;
    for (const n of [20, 80, 10, 50]) content = mergeFacts(PATH, content, [said(n, `budget ${n}`)]).content;
    expect(lines(content ?? "")).toEqual([["budget 80", 80], ["budget 50", 50], ["budget 20", 20], ["budget 10", 10]]);
    // Older than every value the page keeps for the key: nothing to apply.
    const older = mergeFacts(PATH, content, [said(5, "budget 5")]);
    expect(older).toEqual({ content, changed: false, applied: [], current: new Map() });
  });

  it("names in `current` only the facts that are current after the merge, one per key", () => {
    const merged = mergeFacts(PATH, undefined, [said(10, "budget is 4k"), said(20, "budget is 5k"), said(15, "budget is 4.5k"), said(12, "venue is Casa", "venue")]);
    expect(merged.applied.map((f) => f.sources[0]?.seq)).toEqual([10, 20, 15, 12]);
    expect([...merged.current].map(([key, f]) => [key, f.sources[0]?.seq])).toEqual([["budget", 20], ["venue", 12]]);
    expect(lines(merged.content)).toEqual([["budget is 5k", 20], ["budget is 4.5k", 15], ["budget is 4k", 10]]);
  });

  it("lets the later of two facts one message states for a key be current", () => {
    const merged = mergeFacts(PATH, undefined, [said(7, "budget is 4k"), said(7, "budget is 5k, correcting myself")]);
    expect(parsePage(merged.content).get("budget")?.current.statement).toBe("budget is 5k, correcting myself");
    expect(merged.current.get("budget")?.statement).toBe("budget is 5k, correcting myself");
    expect(mergeFacts(PATH, merged.content, [said(7, "budget is 4k"), said(7, "budget is 5k, correcting myself")]).changed).toBe(false);
  });

  it("writes each line's seq, and reads the format without it as older than any seq", () => {
    const merged = mergeFacts(PATH, undefined, [said(80, "budget is 5k")]);
    expect(merged.content.split("\n")[1]).toBe(`- budget: budget is 5k (msg m80, seq 80, ref ${ref(80)})`);
    expect(renderPage(PATH, parsePage(merged.content))).toBe(merged.content);

    const legacy = [`Extracted memory ${PATH}: facts taken from conversation history, newest value first.`, `- budget: budget is 9k (msg m90, ref ${ref(90)})`, `  previously: budget is 8k (msg m85, ref ${ref(85)})`].join("\n");
    expect(parsePage(legacy).get("budget")).toEqual({ current: { statement: "budget is 9k", messageId: "m90", ref: ref(90) }, previous: [{ statement: "budget is 8k", messageId: "m85", ref: ref(85) }] });
    const next = mergeFacts(PATH, legacy, [said(2, "budget is 2k")]);
    expect(lines(next.content)).toEqual([["budget is 2k", 2], ["budget is 9k", undefined], ["budget is 8k", undefined]]);
    // The old lines are written back as they were.
    expect(next.content.split("\n").slice(2)).toEqual(legacy.split("\n").slice(1).map((line) => line.replace(/^- budget:/, "  previously:")));
    expect(mergeFacts(PATH, next.content, [said(90, "budget is 9k")]).changed).toBe(false);
  });

  // Facts of one conversation: a few keys (the page never drops one), messages 1–40, each message
  // in one slice; a message may state several facts, a key several times.
  const KEYS = ["budget", "date", "venue", "name", "k1", "k2", "k3"];
  const conversation = fc
    .array(fc.record({ key: fc.constantFrom(...KEYS), seq: fc.integer({ min: 1, max: 40 }), statement: fc.string({ minLength: 1, maxLength: 40 }) }), { minLength: 1, maxLength: 60 })
    .map((raw) =>
      raw
        .map((r, i) => ({ ...said(r.seq, `${oneLine(r.statement) || "x"} #${i}`, r.key), order: i }))
        // The conversation's order: by message, and within a message as the facts were said.
        .sort((a, b) => (a.sources[0]?.seq ?? 0) - (b.sources[0]?.seq ?? 0) || a.order - b.order)
        .map(({ order: _order, ...f }) => f),
    );

  it("makes the fact of the latest message current per key, for any split into slices merged in any order, and a merged slice again changes nothing", () => {
    fc.assert(
      fc.property(conversation, fc.func(fc.integer({ min: 0, max: 3 })), fc.array(fc.nat(), { minLength: 4, maxLength: 4 }), (facts, sliceOf, shuffle) => {
        const slices = [0, 1, 2, 3].map((s) => facts.filter((f) => sliceOf(f.sources[0]?.seq ?? 0) === s));
        const order = [0, 1, 2, 3].sort((a, b) => (shuffle[a] ?? 0) - (shuffle[b] ?? 0) || a - b);
        let content: string | undefined;
        for (const s of order) content = mergeFacts(PATH, content, slices[s] ?? []).content;
        const page = parsePage(content ?? "");
        for (const key of new Set(facts.map((f) => f.key))) {
          const latest = facts.filter((f) => f.key === key).reduce((a, b) => ((b.sources[0]?.seq ?? 0) >= (a.sources[0]?.seq ?? 0) ? b : a));
          const entry = page.get(key);
          expect(entry?.current.statement).toBe(latest.statement);
          const seqs = [entry?.current, ...(entry?.previous ?? [])].map((line) => line?.seq ?? 0);
          expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
          expect(new Set(seqs).size).toBe(seqs.length);
        }
        for (const slice of slices) expect(mergeFacts(PATH, content, slice)).toEqual({ content, changed: false, applied: [], current: new Map() });
      }),
    );
  });
});
