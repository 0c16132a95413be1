import { foldSearchText, NO_SPACE_RANGES, SEARCH_FOLDS } from "./search-text";
import { indexTokens } from "./turn-bm25";

/**
 * A search hit's snippet, cut from the stored raw text: the full-text indexes keep no copy of what
 * they index (contentless), so FTS5's `snippet()` has no text to cut. For scripts written with
 * spaces it is what `snippet(fts, <column>, open, close, ellipsis, tokens)` returns over the
 * indexed (folded) text for the query `{columns} : ("t1" OR "t2" …)`, but in the raw characters
 * (test/core/snippet.test.ts compares the two in node:sqlite). FTS5's rules (fts5_aux.c):
 *
 * - each phrase instance (sorted by token, then phrase) proposes the window of `tokens` tokens
 *   starting at it, scored 1000 per distinct phrase in it and 1 per further instance, then moved
 *   to centre the span from its first instance to the end of its last, and clamped to the text;
 * - in a text longer than a window, the sentence holding the instance (a token after `.` or `:`
 *   and a blank starts one) proposes the window starting there, unmoved, scored 100 more (120 for
 *   the first sentence); the first best window wins; with no instance, the first `tokens` tokens;
 * - overlapping instances are highlighted as one; one starting before the window is not, one
 *   running past its end is cut there; an ellipsis stands for the text before the window (text
 *   before the first token is kept) and after it, unless the window reaches the end.
 *
 * Scripts written without spaces are matched through grams in another column, so FTS5 highlights
 * nothing there: here a gram term is highlighted wherever it occurs and counts as an instance at
 * the token holding it, and a run (one token to unicode61) longer than its share of the window is
 * cut to a piece around its first highlight, with an ellipsis where it was cut.
 */

export interface SnippetMarks { readonly open: string; readonly close: string; readonly ellipsis: string; readonly tokens: number }

/** Every search's snippets: matched terms between « and », 24 tokens, an ellipsis where text was left out. */
export const SEARCH_SNIPPET: SnippetMarks = { open: "«", close: "»", ellipsis: "…", tokens: 24 };

/** Characters of a run of a script without spaces kept per token of the window. */
const RUN_CHARS_PER_TOKEN = 16;
/** Bounds `tokens`, so that a window's arithmetic stays exact whatever a caller passes. */
const MAX_TOKENS = 1 << 20;

// A unicode61 token: a letter, digit or private-use character, then any more of them or of the
// combining diacritics it removes (sqlite3Fts5UnicodeIsdiacritic: these, not all of U+0300–036F).
// A diacritic continues a token but cannot start one; every other mark separates tokens.
const TOKEN = /[\p{L}\p{N}\p{Co}][\p{L}\p{N}\p{Co}\u0300-\u0304\u0306-\u030c\u030f\u0311\u031b\u0323-\u0328\u032d\u032e\u0330\u0331]*/gu;
const NO_SPACE_CLASS = NO_SPACE_RANGES.map(([lo, hi]) => `\\u{${lo.toString(16)}}-\\u{${hi.toString(16)}}`).join("");
const HAS_NO_SPACE = new RegExp(`[${NO_SPACE_CLASS}]`, "u");
/** A term as `gramsOf` makes it: two characters of a script without spaces, or one alone. */
const GRAM = new RegExp(`^[${NO_SPACE_CLASS}]{1,2}$`, "u");
const FOLD = new Map(SEARCH_FOLDS);

/** A phrase instance: the query's phrase `phrase` at token `pos`, `size` tokens long. */
interface Instance { readonly pos: number; readonly phrase: number; readonly size: number; readonly gram: boolean }
type Range = [start: number, end: number];

/** Ranges sorted by start, those that overlap or meet joined. */
function coalesce(ranges: Iterable<Range>): Range[] {
  const out: Range[] = [];
  for (const [a, b] of ranges) {
    const top = out[out.length - 1];
    if (top !== undefined && a <= top[1]) top[1] = Math.max(top[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** The raw offsets where a character of the folded text starts, and where one ends (each fold maps one UTF-16 unit to at most one). */
function rawOffsets(text: string, folded: string): { start: (at: number) => number; end: (at: number) => number } {
  if (folded === text) return { start: (at) => at, end: (at) => at };
  const source = new Int32Array(folded.length);
  let j = 0;
  for (let i = 0; i < text.length; i++) if (FOLD.get(text.charAt(i)) !== "") source[j++] = i;
  return { start: (at) => (at >= folded.length ? text.length : (source[at] ?? 0)), end: (at) => (at <= 0 ? 0 : (source[at - 1] ?? 0) + 1) };
}

/** Tokens that start a sentence as FTS5 finds them: the first, and each after `.` or `:` and at least one blank. */
function sentenceStarts(folded: string, starts: readonly number[]): number[] {
  const firsts = starts.length > 0 ? [0] : [];
  for (let p = 1; p < starts.length; p++) {
    const before = (starts[p] ?? 0) - 1;
    let i = before;
    while (i >= 0 && " \t\n\r".includes(folded.charAt(i))) i--;
    if (i !== before && (folded.charAt(i) === "." || folded.charAt(i) === ":")) firsts.push(p);
  }
  return firsts;
}

/**
 * Scores windows [start, end) whose bounds never decrease from one call to the next, in time
 * linear in the instances overall (FTS5 rescans every instance for every window).
 */
function windowScorer(found: readonly Instance[]): (start: number, end: number) => { score: number; first: number; last: number } {
  const inWindow = new Map<number, number>();
  let [lo, hi, distinct] = [0, 0, 0];
  const bump = (phrase: number, by: number): number => {
    inWindow.set(phrase, (inWindow.get(phrase) ?? 0) + by);
    return inWindow.get(phrase) ?? 0;
  };
  return (start, end) => {
    for (let f = found[hi]; f !== undefined && f.pos < end; f = found[++hi]) if (bump(f.phrase, 1) === 1) distinct += 1;
    for (let f = found[lo]; f !== undefined && lo < hi && f.pos < start; f = found[++lo]) if (bump(f.phrase, -1) === 0) distinct -= 1;
    return { score: hi - lo + 999 * distinct, first: lo, last: hi - 1 };
  };
}

/** The first token of the window FTS5 shows (fts5SnippetFunction, one column). */
function bestStart(found: readonly Instance[], firsts: readonly number[], nDoc: number, nToken: number): number {
  const around = windowScorer(found);
  const fromSentence = windowScorer(found);
  let [best, start, sentence] = [0, 0, 0];
  for (const { pos } of found) {
    const window = around(pos, pos + nToken);
    const last = found[window.last];
    if (window.score > best && last !== undefined) {
      best = window.score;
      const first = found[window.first]?.pos ?? pos;
      start = first - Math.trunc((nToken - (last.pos + last.size - first)) / 2);
      if (start + nToken > nDoc) start = nDoc - nToken;
      if (start < 0) start = 0;
    }
    if (nDoc <= nToken) continue;
    while ((firsts[sentence + 1] ?? Infinity) <= pos) sentence += 1;
    const first = firsts[sentence] ?? 0;
    if (first >= pos) continue;
    const score = fromSentence(first, first + nToken).score + (first === 0 ? 120 : 100);
    if (score > best) [best, start] = [score, first];
  }
  return start;
}

/**
 * The part of a run (folded[s, e)) longer than `cap` characters to show: `cap` of them, centred on
 * the first highlight in it, or its head. Counted in code points, so that no character is split.
 */
function pieceOf(folded: string, s: number, e: number, cap: number, hit: Range | undefined): Range {
  const chars = [...folded.slice(s, e)];
  if (chars.length <= cap) return [s, e];
  const offsets = [s];
  for (const c of chars) offsets.push((offsets[offsets.length - 1] ?? s) + c.length);
  let from = 0;
  if (hit !== undefined && hit[0] < e) {
    const a = Math.max(0, offsets.indexOf(Math.max(s, hit[0])));
    const b = Math.max(a, offsets.indexOf(Math.min(e, hit[1])));
    from = Math.min(Math.max(0, a - Math.max(0, Math.floor((cap - (b - a)) / 2))), chars.length - cap);
  }
  return [offsets[from] ?? s, offsets[from + cap] ?? e];
}

/** The snippet of `text` for a search whose terms are `terms` (as `recallTerms` returns them for the query). */
export function snippetOf(text: string, terms: readonly string[], marks: SnippetMarks): string {
  const nToken = Math.min(Math.max(Math.trunc(marks.tokens) || 1, 1), MAX_TOKENS);
  const folded = foldSearchText(text);
  const raw = rawOffsets(text, folded);
  const [starts, ends, stems]: [number[], number[], string[]] = [[], [], []];
  for (const match of folded.matchAll(TOKEN)) {
    const [stem] = indexTokens(match[0]);
    if (stem === undefined) continue;
    starts.push(match.index);
    ends.push(match.index + match[0].length);
    stems.push(stem);
  }
  const nDoc = stems.length;

  // Each term is a phrase of the query, numbered in order as FTS5 numbers them.
  const byStem = new Map<string, number[]>();
  const phrases: { phrase: number; stems: string[] }[] = [];
  const found: Instance[] = [];
  const hits: Range[] = [];
  terms.forEach((term, phrase) => {
    if (GRAM.test(term)) {
      // One instance per token holding the gram (as FTS5 has one per token and phrase); where the
      // gram recurs at once (哈哈哈) its hits are one highlight, so a run of repeats costs nothing.
      let counted = -1;
      let pos = 0;
      let last: Range | undefined;
      for (let at = folded.indexOf(term); at >= 0; at = folded.indexOf(term, at + 1)) {
        while ((starts[pos + 1] ?? Infinity) <= at) pos += 1;
        if (pos !== counted && nDoc > 0) found.push({ pos, phrase, size: 1, gram: true });
        counted = pos;
        if (last !== undefined && at <= last[1]) last[1] = at + term.length;
        else hits.push((last = [at, at + term.length]));
      }
      return;
    }
    const tokens = [...term.matchAll(TOKEN)].flatMap((match) => indexTokens(match[0]));
    const [first] = tokens;
    if (first !== undefined && tokens.length === 1) byStem.set(first, [...(byStem.get(first) ?? []), phrase]);
    else if (tokens.length > 1) phrases.push({ phrase, stems: tokens });
  });
  stems.forEach((stem, pos) => {
    for (const phrase of byStem.get(stem) ?? []) found.push({ pos, phrase, size: 1, gram: false });
    for (const p of phrases) if (p.stems.every((s, j) => stems[pos + j] === s)) found.push({ pos, phrase: p.phrase, size: p.stems.length, gram: false });
  });
  found.sort((a, b) => a.pos - b.pos || a.phrase - b.phrase);

  const rangeStart = bestStart(found, sentenceStarts(folded, starts), nDoc, nToken);
  const rangeEnd = rangeStart + nToken - 1;
  const lastToken = Math.min(rangeEnd, nDoc - 1);
  const toEnd = rangeEnd >= nDoc - 1;
  const spanStart = rangeStart > 0 ? (starts[rangeStart] ?? 0) : 0;
  const spanEnd = toEnd ? folded.length : (ends[rangeEnd] ?? folded.length);

  // Highlights in folded offsets: FTS5's instances, overlapping ones as one, that start in the
  // window (cut at its end), and the gram hits in it.
  const marked: Range[] = [];
  for (const [first, last] of coalesce(found.filter((f) => !f.gram).map((f): Range => [f.pos, f.pos + f.size - 1]))) {
    if (first >= rangeStart && first <= rangeEnd) marked.push([starts[first] ?? 0, ends[Math.min(last, rangeEnd)] ?? 0]);
  }
  for (const [a, b] of hits) if (a < spanEnd && b > spanStart) marked.push([Math.max(a, spanStart), Math.min(b, spanEnd)]);
  const merged = coalesce(marked.sort((a, b) => a[0] - b[0]));

  // Cut each over-long run of the window to its share of the window's characters.
  const cap = Math.floor((nToken * RUN_CHARS_PER_TOKEN) / Math.max(1, lastToken - rangeStart + 1));
  const cuts: Range[] = [];
  for (let t = rangeStart, k = 0; t <= lastToken; t++) {
    const [s, e] = [starts[t] ?? 0, ends[t] ?? 0];
    while ((merged[k]?.[1] ?? Infinity) <= s) k += 1;
    const [keepStart, keepEnd] = e - s > cap && HAS_NO_SPACE.test(folded.slice(s, e)) ? pieceOf(folded, s, e, cap, merged[k]) : [s, e];
    if (keepStart > s) cuts.push([s, keepStart]);
    if (keepEnd < e) cuts.push([keepEnd, e]);
  }

  // The window's text, less the cuts, from the raw text; an ellipsis never follows another.
  const out: string[] = [];
  let ellipsed = false;
  const say = (piece: string): void => {
    if (piece === "") return;
    out.push(piece);
    ellipsed = false;
  };
  const ellipsis = (): void => {
    if (!ellipsed) out.push(marks.ellipsis);
    ellipsed = true;
  };
  if (rangeStart > 0) ellipsis();
  const kept: [number, number, number, number][] = [];
  let resume: [number, number] = [spanStart, rangeStart > 0 ? raw.start(spanStart) : 0];
  for (const [cutStart, cutEnd] of cuts) {
    kept.push([...resume, cutStart, raw.end(cutStart)]);
    resume = [cutEnd, raw.start(cutEnd)];
  }
  kept.push([...resume, spanEnd, toEnd ? text.length : raw.end(spanEnd)]);
  let k = 0;
  kept.forEach(([a, rawA, b, rawB], i) => {
    if (i > 0) ellipsis();
    let cursor = rawA;
    while ((merged[k]?.[1] ?? Infinity) <= a) k += 1;
    for (let j = k; (merged[j]?.[0] ?? Infinity) < b; j++) {
      const [ms, me] = merged[j] ?? [0, 0];
      const open = raw.start(Math.max(ms, a));
      const close = raw.end(Math.min(me, b));
      if (close <= open) continue;
      say(text.slice(cursor, open));
      say(marks.open);
      say(text.slice(open, close));
      say(marks.close);
      cursor = close;
    }
    say(text.slice(cursor, rawB));
  });
  if (!toEnd) ellipsis();
  return out.join("");
}
