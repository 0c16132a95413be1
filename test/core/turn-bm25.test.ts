import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { byConversationBm25, conversationBm25, countsWithContext, estimatedRowsWith, indexTokens, TERM_SCAN, TURN_COLUMN_WEIGHTS, type IndexedTurn } from "../../src/core/turn-bm25";

/**
 * Recall's bm25 over one conversation is compared with FTS5's own: a table of the turn index's
 * shape and tokenizer (migrations/shard/0015) holding only the conversation's turns, queried the
 * way storage queries the shard's (the scope AND the terms OR-ed within the indexed columns).
 */
const COLUMNS = ["author", "text", "grams", "context"] as const;

function fts5Scores(turns: readonly IndexedTurn[], terms: readonly string[]): { scores: (number | undefined)[]; rows: number; rowsWith: Map<string, number> } {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE VIRTUAL TABLE turn_fts USING fts5(scope, author, text, grams, context, tokenize = 'porter unicode61 remove_diacritics 2')");
  const insert = db.prepare("INSERT INTO turn_fts (rowid, scope, author, text, grams, context) VALUES (?, 'k1', ?, ?, ?, ?)");
  turns.forEach((turn, i) => insert.run(i + 1, turn.author, turn.text, turn.grams, turn.context));
  const filter = `{${COLUMNS.join(" ")}}`;
  const weights = Object.values(TURN_COLUMN_WEIGHTS).join(", ");
  const found = db
    .prepare(`SELECT rowid, bm25(turn_fts, ${weights}) AS rank FROM turn_fts WHERE turn_fts MATCH ?`)
    .all(`scope : "k1" AND ${filter} : (${terms.map((t) => `"${t}"`).join(" OR ")})`);
  const ranks = new Map(found.map((row) => [Number(row["rowid"]), Number(row["rank"])]));
  const count = (match: string) => Number(db.prepare("SELECT count(*) AS n FROM turn_fts WHERE turn_fts MATCH ?").get(match)?.["n"]);
  const rowsWith = new Map(terms.map((term) => [term, count(`scope : "k1" AND ${filter} : "${term}"`)]));
  const rows = count(`scope : "k1"`);
  db.close();
  return { scores: turns.map((_, i) => ranks.get(i + 1)), rows, rowsWith };
}

// Words that stem together and apart, an accented and a Cyrillic one, a two-character gram.
// Devanagari's vowel signs split a word for unicode61, so a Hindi query term is a phrase of tokens,
// and a term of vowel signs alone is no token at all (an empty phrase, which matches nothing).
const WORDS = ["kiln", "kilns", "pottery", "potteries", "caf\u00e9", "cafe", "clay", "студия", "firing", "fired", "预算", "ok", "a", "भाषा", "हिन्दी", "भाषा भाषा", "भारत"];
const text = fc.array(fc.constantFrom(...WORDS), { maxLength: 12 }).map((words) => words.join(" "));
const turn = fc.record({ author: fc.constantFrom("Ada", "Bo", "Caf\u00e9 Owner"), text, grams: fc.constantFrom("", "预算", "预算 算会"), context: text });
const query = fc.uniqueArray(fc.constantFrom("kiln", "pottery", "cafe", "café", "clay", "студия", "fire", "预算", "ada", "भाषा", "हिन्दी", "\u093e\u093f\u0940"), { minLength: 1, maxLength: 4 });

describe("conversationBm25", () => {
  it("scores every turn as FTS5's bm25 does over a table of the conversation alone", () => {
    fc.assert(
      fc.property(fc.array(turn, { minLength: 1, maxLength: 30 }), query, (turns, terms) => {
        const fts = fts5Scores(turns, terms);
        const ours = conversationBm25(terms, turns, { rows: fts.rows, rowsWith: fts.rowsWith });
        turns.forEach((_, i) => {
          const expected = fts.scores[i];
          if (expected === undefined) expect(ours[i]).toBe(0);
          else expect(ours[i]).toBeCloseTo(-expected, 9);
        });
      }),
      { numRuns: 200 },
    );
  });

  it("takes the conversation's mean length from the candidates it is given", () => {
    const short: IndexedTurn = { author: "Ada", text: "kiln", grams: "", context: "" };
    const long: IndexedTurn = { author: "Ada", text: "kiln clay clay clay clay clay clay", grams: "", context: "" };
    const counts = { rows: 100, rowsWith: new Map([["kiln", 2]]) };
    const [alone] = conversationBm25(["kiln"], [short], counts);
    const [beside] = conversationBm25(["kiln"], [short, long], counts);
    // Beside a longer candidate the short one is shorter than the mean, so it scores higher.
    expect(beside).toBeGreaterThan(alone ?? Infinity);
  });
});

describe("byConversationBm25", () => {
  it("orders the index's candidates by the conversation's statistics, ties the later turn first, ranks negated", () => {
    const turns = [
      { seq: 1, rank: -9, tag: "common" },
      { seq: 2, rank: -1, tag: "rare" },
      { seq: 3, rank: -5, tag: "common again" },
    ];
    const indexed: IndexedTurn[] = [
      { author: "Ada", text: "pottery", grams: "", context: "" },
      { author: "Ada", text: "kiln", grams: "", context: "" },
      { author: "Ada", text: "pottery", grams: "", context: "" },
    ];
    const ordered = byConversationBm25(["pottery", "kiln"], turns, indexed, { rows: 40, rowsWith: new Map([["pottery", 30], ["kiln", 1]]) });
    expect(ordered.map((t) => t.tag)).toEqual(["rare", "common again", "common"]);
    expect(ordered.every((t) => t.rank <= 0)).toBe(true);
    expect(ordered[0]?.rank).toBeLessThan(ordered[1]?.rank ?? 0);
  });
});

/** FTS5's count of the turns holding each term in `columns`, over a table of the conversation alone. */
function fts5Counts(turns: readonly IndexedTurn[], terms: readonly string[], columns: readonly string[]): Map<string, number> {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE VIRTUAL TABLE t USING fts5(author, text, grams, context, tokenize = 'porter unicode61 remove_diacritics 2')");
  const insert = db.prepare("INSERT INTO t (rowid, author, text, grams, context) VALUES (?, ?, ?, ?, ?)");
  turns.forEach((turn, i) => insert.run(i + 1, turn.author, turn.text, turn.grams, turn.context));
  const counts = new Map(terms.map((term) => [term, Number(db.prepare("SELECT count(*) AS n FROM t WHERE t MATCH ?").get(`{${columns.join(" ")}} : "${term}"`)?.["n"])]));
  db.close();
  return counts;
}

describe("countsWithContext", () => {
  it("counts exactly what FTS5 counts over every column when the sample holds every turn of a conversation", () => {
    // A turn's context is the words its neighbours lend (core/turn-context): here every turn within two places.
    const conversation = fc.array(turn, { minLength: 1, maxLength: 30 }).map((drawn) =>
      drawn.map((t, i) => ({ ...t, context: drawn.filter((_, j) => j !== i && Math.abs(j - i) <= 2).map((n) => `${n.text} ${n.grams}`).join(" ") })),
    );
    fc.assert(
      fc.property(conversation, query, (turns, terms) => {
        const own = { rows: turns.length, rowsWith: fts5Counts(turns, terms, ["author", "text", "grams"]) };
        const counted = countsWithContext(terms, own, turns);
        expect(counted.rows).toBe(turns.length);
        expect(counted.rowsWith).toEqual(fts5Counts(turns, terms, ["author", "text", "grams", "context"]));
      }),
      { numRuns: 200 },
    );
  });

  it("scales a term's own count by the share of the sample holding it anywhere, never past the rows, and keeps a term the sample never holds in its own words", () => {
    const own = { rows: 100, rowsWith: new Map([["kiln", 10], ["clay", 40], ["cafe", 3]]) };
    const sample: IndexedTurn[] = [
      { author: "Ada", text: "kiln", grams: "", context: "clay" },
      { author: "Bo", text: "", grams: "", context: "kiln clay" },
      { author: "Bo", text: "", grams: "", context: "kiln" },
      { author: "Ada", text: "clay", grams: "", context: "cafe" },
    ];
    const counted = countsWithContext(["kiln", "clay", "cafe"], own, sample);
    // kiln: 1 turn in its own words, 3 anywhere → 10 × 3; clay: 1 own, 3 anywhere → 120, capped at 100.
    expect(counted.rowsWith).toEqual(new Map([["kiln", 30], ["clay", 100], ["cafe", 3]]));
  });
});

describe("indexTokens", () => {
  it("splits, folds and stems as unicode61 with porter: accents off Latin letters only, case folded, marks kept in the word", () => {
    expect(indexTokens("Na\u0308ive CAF\u00c9s, Ёлка x_y 3.14 emoji\u{1F600}here")).toEqual(["naiv", "cafe", "ёлка", "x", "y", "3", "14", "emoji", "here"]);
  });
});

describe("estimatedRowsWith", () => {
  it("is the count itself when the scan ended before its limit", () => {
    expect(estimatedRowsWith(0, 0, 5_000, 3_000)).toBe(0);
    expect(estimatedRowsWith(TERM_SCAN - 1, 10, 5_000, 3_000)).toBe(TERM_SCAN - 1);
  });

  it("carries the density of a full scan over the whole log, at least the count and at most the conversation's turns", () => {
    // 1,000 matches over the newest 2,000 of 10,000 events: about 5,000 over the whole log.
    expect(estimatedRowsWith(TERM_SCAN, 8_001, 10_000, 8_000)).toBe(5_000);
    // A term in every turn: capped at the conversation's turns.
    expect(estimatedRowsWith(TERM_SCAN, 9_001, 10_000, 4_000)).toBe(4_000);
    // The scan spans the whole log: the count.
    expect(estimatedRowsWith(TERM_SCAN, 1, 1_000, 5_000)).toBe(TERM_SCAN);
    // A span that cannot be (the oldest after the mark) counts as one event, never divides by zero.
    expect(estimatedRowsWith(TERM_SCAN, 2_000, 1_000, 5_000)).toBe(5_000);
  });
});
