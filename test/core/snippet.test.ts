import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { foldSearchText, matchExpression, recallTerms } from "../../src/core/search-text";
import { snippetOf, type SnippetMarks } from "../../src/core/snippet";

/**
 * The snippet is compared with FTS5's own `snippet()` in node:sqlite: a table of the indexes'
 * tokenizer storing the folded text (what the indexes are given, `searchForm`), queried as storage
 * queries them. A second column holds a marker every row matches, so that a row whose text holds
 * no term still comes back and shows FTS5's snippet without a match; no term can match it, so
 * the text column's instances are those of the production query alone.
 */
const MARKS: SnippetMarks = { open: "«", close: "»", ellipsis: "…", tokens: 24 };

const db = new DatabaseSync(":memory:");
db.exec("CREATE VIRTUAL TABLE t USING fts5(body, marker, tokenize = 'porter unicode61 remove_diacritics 2')");
afterAll(() => db.close());

/** The MATCH of `terms` over the text column, built as `matchExpression` builds it. */
const matchOf = (terms: readonly string[]): string | undefined => (terms.length === 0 ? undefined : `{body} : (${terms.map((term) => `"${term}"`).join(" OR ")})`);

function fts5Snippet(text: string, match: string | undefined, marks: SnippetMarks): string {
  db.exec("DELETE FROM t");
  db.prepare("INSERT INTO t (rowid, body, marker) VALUES (1, ?, 'row')").run(foldSearchText(text));
  const query = `marker : "row"${match === undefined ? "" : ` OR ${match}`}`;
  const row = db.prepare("SELECT snippet(t, 0, ?, ?, ?, ?) AS s FROM t WHERE t MATCH ?").get(marks.open, marks.close, marks.ellipsis, marks.tokens, query);
  return String(row?.["s"]);
}

/** FTS5 cuts the folded text; the snippet is the raw text, so it equals FTS5's once folded, and exactly when nothing folds. */
function expectFts5(text: string, terms: readonly string[], match: string | undefined, marks = MARKS): string {
  const ours = snippetOf(text, terms, marks);
  expect(foldSearchText(text) === text ? ours : foldSearchText(ours)).toBe(fts5Snippet(text, match, marks));
  return ours;
}

const filler = (from: number, n: number): string => Array.from({ length: n }, (_, i) => `w${from + i}`).join(" ");

// [name, text, query]: the terms are recallTerms(query), the MATCH matchExpression(query).
const CASES: readonly (readonly [string, string, string])[] = [
  ["stems both sides", "She donated the old kiln to the school.", "donate"],
  ["removes accents and folds case", "Un CAFÉ crème, à la française: naïve Ångström.", "cafe creme naive angstrom"],
  ["keeps punctuation", "((kiln)),kiln;kiln!—«kiln»...", "kiln"],
  ["a match at the start of a long text", `kiln ${filler(0, 60)}`, "kiln"],
  ["a match in the middle", `${filler(0, 40)} the kiln fired ${filler(40, 40)}`, "kiln"],
  ["a match at the end", `${filler(0, 60)} kiln.`, "kiln"],
  ["several distinct terms", `${filler(0, 30)} kiln ${filler(30, 30)} kiln clay glaze ${filler(60, 30)} glaze ${filler(90, 5)}`, "kiln clay glaze"],
  ["repeated terms", `${filler(0, 10)} clay clay ${filler(10, 30)} clay ${filler(40, 3)} clay clay clay ${filler(43, 30)}`, "clay"],
  ["sentences", `${filler(0, 30)}. Then: ${filler(30, 10)} kiln ${filler(40, 5)}. Next ${filler(45, 20)}`, "kiln"],
  ["no match", `${filler(0, 40)}.`, "pottery"],
  ["Arabic folded letters", "سأرسل الكتاب إلى المكتبة يوم ٣ مايو، والمكتبة قريبة", "الکتاب المکتبه یوم ۳"],
  ["Persian with a zero-width non-joiner", "من می‌خواهم کتاب بخوانم و میخواهم بنویسم", "میخواهم"],
  ["Cyrillic", "Ёлка стоит в студии. Студия большая, ЁЛКА высокая.", "студия ёлка"],
  ["Devanagari phrase terms", "मुझे हिन्दी भाषा पसंद है और हिन्दी साहित्य भी", "हिन्दी भाषा"],
];

describe("snippetOf against FTS5's snippet()", () => {
  it.each(CASES)("%s", (_, text, query) => {
    expectFts5(text, recallTerms(query), matchExpression(query, ["body"]));
  });

  it("highlights in the raw text, as the user wrote it", () => {
    expect(expectFts5("She donated the old kiln to the school.", ["donate"], matchOf(["donate"]))).toBe("She «donated» the old kiln to the school.");
    const arabic = expectFts5("ذهبت إلى المكتبة", ["المکتبه"], matchOf(["المکتبه"]));
    expect(arabic).toBe("ذهبت إلى «المكتبة»");
    expect(expectFts5("من می‌خواهم", ["میخواهم"], matchOf(["میخواهم"]))).toBe("من «می‌خواهم»");
    expect(expectFts5("मुझे हिन्दी पसंद", ["हिन्दी"], matchOf(["हिन्दी"]))).toBe("मुझे «हिन्द»ी पसंद");
  });

  it("shows the first tokens with no match, and ellipses where the window leaves text out", () => {
    expect(expectFts5(`${filler(0, 5)}.`, ["kiln"], matchOf(["kiln"]), { ...MARKS, tokens: 3 })).toBe("w0 w1 w2…");
    expect(expectFts5(`${filler(0, 10)} kiln ${filler(10, 10)}`, ["kiln"], matchOf(["kiln"]), { ...MARKS, tokens: 3 })).toBe("…w9 «kiln» w10…");
  });

  // Words that stem together and apart, accents precomposed and combining (one that unicode61
  // removes, two that split a word), Cyrillic, single letters, digits; Devanagari words that are
  // phrases of tokens, Arabic and Persian ones with letters that fold, a tatweel alone.
  const WORDS = [
    ...["donate", "donated", "Donating", "café", "cafe\u0301", "CAFÉ", "naïve", "naive", "kiln", "kilns", "Kiln", "éclair", "Ångström", "über"],
    ...["\u0301x", "x\u0336y", "\u0336", "e\u0305", "ёлка", "Ёлка", "студия", "студии", "run", "running", "a", "I", "x", "42", "3d"],
    ...["हिन्दी", "भाषा", "हिन्दी भाषा", "الكتاب", "الکتاب", "يوم", "می\u200cخواهم", "\u0640"],
  ];
  const SEPARATORS = [" ", " ", " ", ", ", ". ", ": ", "! ", " — ", "\n", "... ", " (", ") ", "'", "-", ".", ":", " \t ", "\u0301 "];
  const sample = fc
    .record({
      lead: fc.constantFrom("", ...SEPARATORS),
      parts: fc.array(fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...SEPARATORS)), { maxLength: 120, size: "max" }),
      tokens: fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 30 })),
    })
    .chain(({ lead, parts, tokens }) => {
      // The terms a query of the text's words could give, folded and lower-cased as recallTerms gives them, in any order.
      const words = new Set(parts.flatMap(([word]) => [foldSearchText(word.toLowerCase()), ...recallTerms(word)]).filter((term) => term !== ""));
      return fc.record({
        text: fc.constant(lead + parts.map(([word, separator]) => word + separator).join("")),
        terms: fc.shuffledSubarray([...words]),
        tokens: fc.constant(tokens),
      });
    });

  it("equals FTS5's snippet on random texts and terms", () => {
    fc.assert(
      fc.property(sample, ({ text, terms, tokens }) => {
        expectFts5(text, terms, matchOf(terms), { ...MARKS, tokens });
      }),
      { seed: 24, numRuns: 1000 },
    );
  });
});

describe("snippetOf in scripts written without spaces", () => {
  it("highlights a gram where it occurs in a run, meeting grams as one", () => {
    expect(snippetOf("我们明天在港口见面，带上灯笼。", recallTerms("港口"), MARKS)).toBe("我们明天在«港口»见面，带上灯笼。");
    expect(snippetOf("我们明天在港口见面，带上灯笼。", recallTerms("港口见面 灯笼"), MARKS)).toBe("我们明天在«港口见面»，带上«灯笼»。");
    expect(snippetOf("今日は港で会いましょう", recallTerms("港"), MARKS)).toBe("今日は«港»で会いましょう");
    expect(snippetOf("ฉันชอบกินข้าวมาก", recallTerms("ข้าว"), MARKS)).toBe("ฉันชอบกิน«ข้าว»มาก");
    // A gram that is a whole run is a token FTS5 matches too, and highlights alike.
    expect(expectFts5("Budget 预算 review", recallTerms("预算 review"), matchExpression("预算 review", ["body"]))).toBe("Budget «预算» «review»");
  });

  it("cuts an over-long run to a piece around its first highlight, bounded whatever the text", () => {
    const run = "天".repeat(100_000) + "港口" + "地".repeat(100_000);
    expect(snippetOf(run, ["港口"], MARKS)).toBe(`…${"天".repeat(191)}«港口»${"地".repeat(191)}…`);
    const clauses = Array.from({ length: 2_000 }, (_, i) => (i === 1_000 ? "我们明天在港口见面" : "这是一个很长很长的句子没有任何标点符号".repeat(3))).join("，");
    const windowed = snippetOf(clauses, ["港口"], MARKS);
    expect(windowed).toContain("我们明天在«港口»见面");
    expect(windowed.length).toBeLessThan(24 * 16 + 100);
    expect(snippetOf("天".repeat(5_000), [], MARKS)).toBe(`${"天".repeat(384)}…`);
    expect(snippetOf(`${"天".repeat(1_000)}港口。`, ["港口"], MARKS)).toBe(`…${"天".repeat(382)}«港口»。`);
    // Characters beyond the Basic Multilingual Plane (CJK extension B) are cut whole.
    expect(snippetOf("\u{20000}".repeat(1_000), ["\u{20000}"], MARKS)).toBe(`«${"\u{20000}".repeat(384)}»…`);
  });
});

describe("snippetOf on any string", () => {
  it("never throws on empty, termless, broken or huge texts", () => {
    expect(snippetOf("", ["kiln"], MARKS)).toBe("");
    expect(snippetOf("...", [], MARKS)).toBe("...");
    expect(snippetOf(`${filler(0, 30)}`, [], MARKS)).toBe(`${filler(0, 24)}…`);
    expect(snippetOf("kiln", ["", "\u093e\u093f", "\uD800", "..."], MARKS)).toBe("kiln");
    expect(snippetOf("\uD800ab\uDC00 kiln \uD83D", ["kiln", "\uD800"], MARKS)).toBe("\uD800ab\uDC00 «kiln» \uD83D");
    expect(snippetOf("kiln", ["kiln"], { ...MARKS, tokens: Number.NaN })).toBe("«kiln»");
    const huge = `${"clay pottery glaze, ".repeat(10_000)}kiln`;
    expect(snippetOf(huge, ["kiln", "clay", "glaze"], MARKS)).toMatch(/^….*«kiln»$/u);
    // A token of a script with spaces is never cut: FTS5 shows it whole, however long.
    expect(snippetOf("x".repeat(200_000), ["x"], MARKS)).toBe("x".repeat(200_000));
  });
});
