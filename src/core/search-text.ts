/**
 * How text becomes search terms, the one owner of the rules both sides of recall apply: what the
 * D1 full-text indexes hold (`turn_terms` and `conversation_memory_terms` on the shards,
 * `memory_terms` in the control database: contentless FTS5 tables whose rows the writers compute
 * here, `searchForm`, migrations/shard/0023 and control/0019) and the queries built here. No SQL
 * computes a term: the one fold SQL applies is the replace() of exactly these `SEARCH_FOLDS` that
 * storage/shard/turn-terms writes for a text that holds them. test/integration/turn-terms.test.ts
 * checks that the index holds what this module computes, in every script.
 *
 * - **Folding.** Characters a reader takes for the same letter are indexed and searched as one:
 *   the Arabic-script letters Persian and Arabic keyboards type differently (ي/ی, ك/ک, ة/ه, the
 *   hamza forms of alef), Persian and Arabic-Indic digits as ASCII digits, and the zero-width
 *   non-joiner and tatweel removed, so "می‌خواهم" (with ZWNJ) and "میخواهم" are one word.
 * - **Words.** FTS5's `porter unicode61 remove_diacritics 2` tokenizer splits on everything but
 *   letters and digits (combining accents it removes, so they split nothing), folds case and Latin
 *   accents, and stems English (donated → donat, the query's "donate" too). Other marks, such as
 *   Devanagari's vowel signs, split a word there; a query word holding one is a phrase of tokens
 *   to FTS5, and `turn-bm25` counts it as one.
 * - **Scripts written without spaces** (Han, kana, Thai, Lao, Khmer, Myanmar): unicode61 makes one
 *   token of a whole run, so a word inside a sentence could never match. Each run is also indexed
 *   as its overlapping pairs of characters (and a run of one character as itself) in a `grams`
 *   column: the usual bigram indexing of CJK, which finds two-character words such as 预算.
 */

/** Each fold: the characters on the left are indexed and searched as the one on the right. */
export const SEARCH_FOLDS: readonly (readonly [string, string])[] = [
  ["\u200C", ""], // zero-width non-joiner
  ["\u0640", ""], // tatweel
  ["\u064A", "\u06CC"], // Arabic yeh → Persian yeh
  ["\u0649", "\u06CC"], // alef maksura → Persian yeh
  ["\u0643", "\u06A9"], // Arabic kaf → Persian keheh
  ["\u0629", "\u0647"], // teh marbuta → heh
  ["\u06C0", "\u0647"], // heh with yeh above → heh
  ["\u0623", "\u0627"], // alef with hamza above → alef
  ["\u0625", "\u0627"], // alef with hamza below → alef
  ["\u0622", "\u0627"], // alef with madda → alef
  ["\u0671", "\u0627"], // alef wasla → alef
  ["\u0624", "\u0648"], // waw with hamza → waw
  ...Array.from({ length: 10 }, (_, d) => [String.fromCharCode(0x06f0 + d), String(d)] as const), // Persian digits
  ...Array.from({ length: 10 }, (_, d) => [String.fromCharCode(0x0660 + d), String(d)] as const), // Arabic-Indic digits
];

const FOLD = new Map(SEARCH_FOLDS);
const FOLDED = new RegExp(`[${SEARCH_FOLDS.map(([from]) => from).join("")}]`, "g");

/** `text` with every fold applied. */
export const foldSearchText = (text: string): string => text.replace(FOLDED, (c) => FOLD.get(c) ?? c);

/** Code point ranges of the scripts written without spaces between words (inclusive). */
export const NO_SPACE_RANGES: readonly (readonly [number, number])[] = [
  [0x0e00, 0x0eff], // Thai, Lao
  [0x1000, 0x109f], // Myanmar
  [0x1780, 0x17ff], // Khmer
  [0x3040, 0x30ff], // Hiragana, Katakana
  [0x3400, 0x4dbf], // CJK extension A
  [0x4e00, 0x9fff], // CJK unified ideographs
  [0xf900, 0xfaff], // CJK compatibility ideographs
  [0x20000, 0x3134f], // CJK extensions B–G
];

const noSpace = (codePoint: number | undefined): boolean => codePoint !== undefined && NO_SPACE_RANGES.some(([lo, hi]) => codePoint >= lo && codePoint <= hi);

/** Whether `text` holds a character of those scripts at all: most text does not, and then has no grams. */
const HAS_NO_SPACE = new RegExp(`[${NO_SPACE_RANGES.map(([lo, hi]) => `\\u{${lo.toString(16)}}-\\u{${hi.toString(16)}}`).join("")}]`, "u");

/**
 * Characters of a text that grams are taken from: the first 4,096 (Telegram's longest message).
 * The cap bounds one row of the index (and the parameter that carries it) for the longest texts
 * the API takes; a chat message is never cut.
 */
export const MAX_GRAM_POSITIONS = 4_096;

/**
 * The grams of `text` (already folded): for each run of characters of a script written without
 * spaces, its overlapping pairs, or the character itself for a run of one. In text order, repeats kept.
 */
export function gramsOf(text: string): string[] {
  if (!HAS_NO_SPACE.test(text)) return [];
  const points = [...text].slice(0, MAX_GRAM_POSITIONS);
  const codes = points.map((c) => c.codePointAt(0));
  const grams: string[] = [];
  for (let i = 0; i < points.length; i++) {
    if (!noSpace(codes[i])) continue;
    if (noSpace(codes[i + 1])) grams.push(`${points[i]}${points[i + 1]}`);
    else if (!noSpace(codes[i - 1])) grams.push(points[i] ?? "");
  }
  return grams;
}

/**
 * What the full-text indexes hold for `text`: the text folded, and its grams (space-separated; ""
 * when it has none). The one computation of both: the writers index it with what they write
 * (storage/shard/turn-terms, storage/page-terms), so no SQL walks a text's characters.
 */
export function searchForm(text: string): { readonly text: string; readonly grams: string } {
  const folded = foldSearchText(text);
  return { text: folded, grams: gramsOf(folded).join(" ") };
}

/** Shorter words are mostly function words, and match too much to rank anything. */
const MIN_WORD_CHARS = 3;
/** Longer "words" are pasted ids or base64, not topics; the cap also bounds the query's size. */
const MAX_WORD_CHARS = 64;

/**
 * Common English words of at least MIN_WORD_CHARS letters. Dropping them keeps the term cap for
 * words that say what a text is about; bm25 would rank them low anyway, but they would still let
 * every row into the candidates.
 */
const STOP_WORDS = new Set(
  (
    "the and for are but not you all any can had her was one our out has have his how its may new now " +
    "see two who did get him let say she too use that this with from they will would there their what " +
    "about which when make like time just know take into year your some could them than then look only " +
    "come over think also back after work first well even want because these give most been were said " +
    "does yes yeah okay here where why very much more such should shall being each other those through " +
    "while again same"
  ).split(" "),
);

// Letters, marks and digits: a query's words (FTS5 quotes each as a phrase, splitting it where unicode61 would).
const WORD = /[\p{L}\p{M}\p{N}]+/gu;

/**
 * The terms of `text` a search can use, in order: its words (lower-cased, folded; stop words, too
 * short and too long ones left out; runs of scripts without spaces left to their grams), then its grams.
 */
export function searchTerms(text: string): string[] {
  const folded = foldSearchText(text).toLowerCase();
  const words: string[] = [];
  for (const [word] of folded.matchAll(WORD)) {
    const length = [...word].length;
    if (length >= MIN_WORD_CHARS && length <= MAX_WORD_CHARS && !STOP_WORDS.has(word) && !noSpace(word.codePointAt(0))) words.push(word);
  }
  return [...words, ...gramsOf(folded)];
}

/** The distinct words of `text` that carry content (stop words left out, numbers kept), with its grams: what novelty is judged on. */
export function contentWords(text: string): Set<string> {
  const folded = foldSearchText(text).toLowerCase();
  const words = new Set<string>();
  for (const [word] of folded.matchAll(WORD)) {
    if (noSpace(word.codePointAt(0))) continue;
    if (!STOP_WORDS.has(word) && ([...word].length >= MIN_WORD_CHARS || /\p{N}/u.test(word))) words.add(word);
  }
  for (const gram of gramsOf(folded)) words.add(gram);
  return words;
}

/** At most this many terms go into one search: enough for a slice's topics, bounded in cost. */
export const MAX_RECALL_TERMS = 32;

/** The text's most frequent search terms (ties: first seen), at most `maxTerms`. */
export function recallTerms(text: string, maxTerms = MAX_RECALL_TERMS): string[] {
  const seen = new Map<string, { count: number; first: number }>();
  for (const term of searchTerms(text)) {
    const entry = seen.get(term);
    if (entry === undefined) seen.set(term, { count: 1, first: seen.size });
    else entry.count += 1;
  }
  return [...seen]
    .sort(([, a], [, b]) => b.count - a.count || a.first - b.first)
    .slice(0, Math.max(0, maxTerms))
    .map(([term]) => term);
}

/**
 * An FTS5 query for free text over the given columns, or undefined when no term qualifies. Never
 * passes the text through as query syntax: each term is a run of letters, marks and digits (or a
 * gram of them), which cannot contain `"`, so quoting it as a phrase leaves AND, NEAR, `*`, `:`,
 * `^`, parentheses and column filters in the text as plain words or nothing. Terms are OR-ed, so
 * that any one can recall a row, inside one column filter, so that no term can match the scope.
 */
export function matchExpression(text: string, columns: readonly string[], maxTerms = MAX_RECALL_TERMS): string | undefined {
  const terms = recallTerms(text, maxTerms).map((term) => `"${term}"`);
  return terms.length === 0 ? undefined : `{${columns.join(" ")}} : (${terms.join(" OR ")})`;
}
