import { readdirSync, readFileSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { measure, porterStem } from "../../src/core/porter-stem";

/**
 * The stemmer recall counts words with must stem every word exactly as the turn index does, so it
 * is compared with FTS5's own `porter` tokenizer (node:sqlite's SQLite): each word is indexed alone
 * and the term the index stored is read back with fts5vocab.
 */
function indexedStems(words: readonly string[]): string[] {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE VIRTUAL TABLE f USING fts5(x, tokenize = 'porter ascii'); CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance');");
  const insert = db.prepare("INSERT INTO f (rowid, x) VALUES (?, ?)");
  db.exec("BEGIN");
  words.forEach((word, i) => insert.run(i + 1, word));
  db.exec("COMMIT");
  const stems = new Map(db.prepare("SELECT doc, term FROM v").all().map((row) => [Number(row["doc"]), String(row["term"])]));
  db.close();
  return words.map((_, i) => stems.get(i + 1) ?? "");
}

/** Every word of the bench's LoCoMo conversations and questions, lower-cased (the index folds case before stemming). */
function benchWords(): string[] {
  const dir = new URL("../../bench/data/locomo/", import.meta.url);
  const words = new Set<string>();
  for (const file of readdirSync(dir).filter((name) => /^conv-\d+\.json$/.test(name))) {
    const data = JSON.parse(readFileSync(new URL(file, dir), "utf8")) as { sessions: { turns: { text: string }[] }[]; qa: { question: string }[] };
    const texts = [...data.sessions.flatMap((s) => s.turns.map((t) => t.text)), ...data.qa.map((q) => q.question)];
    for (const text of texts) for (const [word] of text.toLowerCase().matchAll(/[a-z0-9]+/g)) words.add(word);
  }
  return [...words];
}

// Pieces that reach every rule: each suffix of each step, letters that change a word's measure or
// its last consonant-vowel-consonant, and bytes outside ASCII (consonants to the stemmer).
const PIECES = [
  ..."aeiouybcdlstzwxngrm",
  ..."ational tional enci anci izer logi bli alli entli eli ousli ization ation ator alism iveness fulness ousness aliti iviti biliti".split(" "),
  ..."icate ative alize iciti ical ful ness al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize".split(" "),
  ..."eed ed ing sses ies ss s ll at bl iz".split(" "),
  "\u00e9",
  "\u0436",
  "\u4e2d",
];

describe("porterStem", () => {
  it("stems every word of the bench's conversations as FTS5 does", () => {
    const words = benchWords();
    expect(words.length).toBeGreaterThan(5_000);
    const expected = indexedStems(words);
    const differing = words.flatMap((word, i) => (porterStem(word) === expected[i] ? [] : [`${word}: ${porterStem(word)} ≠ ${expected[i]}`]));
    expect(differing).toEqual([]);
  });

  it("stems any word made of the rules' suffixes, short words and non-ASCII bytes as FTS5 does", () => {
    const word = fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 6 }).map((pieces) => pieces.join(""));
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 200 }), (words) => {
        const expected = indexedStems(words);
        expect(words.map(porterStem)).toEqual(expected);
      }),
      { numRuns: 100 },
    );
  });

  it("stems the edges as FTS5 does: a word that is all suffix, a y first or doubled", () => {
    // "yed": a y first is no vowel; "ies"/"eed": the suffix must leave a stem; "xyying": a doubled y is a doubled consonant.
    const edges = ["yed", "ying", "ies", "eed", "xyying", "yyed", "ssses", "hoping", "hopping", "filing", "failing"];
    expect(edges.map(porterStem)).toEqual(indexedStems(edges));
    expect(edges.map(porterStem)).toEqual(["yed", "ying", "ie", "e", "xy", "y", "sss", "hope", "hop", "file", "fail"]);
  });

  it("leaves tokens under 3 or over 64 bytes as they are, and counts bytes, not characters", () => {
    expect(porterStem("is")).toBe("is");
    expect(porterStem(`${"a".repeat(62)}ing`)).toBe(`${"a".repeat(62)}ing`);
    expect(porterStem(`${"a".repeat(61)}ing`)).toBe("a".repeat(61));
    // Two characters but three bytes: long enough to stem.
    expect([porterStem("és"), indexedStems(["és"])[0]]).toEqual(["é", "é"]);
    expect(porterStem("да")).toBe("да");
  });

  it("measures vowel-consonant sequences, y a vowel after a consonant", () => {
    expect([measure("tr"), measure("ee"), measure("tree"), measure("y"), measure("by")]).toEqual([0, 0, 0, 0, 0]);
    expect([measure("trouble"), measure("oats"), measure("trees"), measure("ivy")]).toEqual([1, 1, 1, 1]);
    expect([measure("troubles"), measure("private"), measure("oaten"), measure("orrery")]).toEqual([2, 2, 2, 2]);
  });
});
