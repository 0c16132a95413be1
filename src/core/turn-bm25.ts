import { porterStem } from "./porter-stem";

/**
 * Recall's turns ranked by bm25 over their own conversation. The turn index (`turn_fts`) is one
 * FTS5 table per shard, so the bm25 it computes weighs a word by how rare it is on the whole shard:
 * a speaker's name, in every other turn of its chat and nowhere else, counts as a rare word there.
 * Storage asks the index for the candidates (its order, shard statistics) and counts, in the same
 * round trip, how many of the conversation's turns hold each query term; this module scores the
 * candidates again as FTS5's bm25 would over a table holding only this conversation
 * (test/core/turn-bm25.test.ts checks that against FTS5 itself, in node:sqlite).
 *
 * What it cannot know without reading every turn is the conversation's mean indexed length; it
 * takes the candidates' mean. On LoCoMo's questions (bench §12), in an offline replica of the index,
 * that served 90.8% against 90.7% with every statistic exact (docs/MEMORY.md).
 */

/** The turn index's columns, in its order, and the weight bm25 gives each (recall-reads' SQL uses these). */
export const TURN_COLUMN_WEIGHTS = { scope: 0, author: 0.5, text: 1, grams: 1, context: 0.5 } as const;

/** The columns a query's terms may match, in the index's order: every one but `scope`. */
export const TURN_TERM_COLUMNS = ["author", "text", "grams", "context"] as const;

type IndexedColumn = (typeof TURN_TERM_COLUMNS)[number];

/** A candidate's indexed text, column by column, as the index stores it (scope is one token). */
export type IndexedTurn = Readonly<Record<IndexedColumn, string>>;

/** How many of the conversation's indexed turns there are, and how many hold each query term. */
export interface ConversationTermCounts {
  readonly rows: number;
  readonly rowsWith: ReadonlyMap<string, number>;
}

/**
 * How many of a conversation's matches of one term recall reads at most: a term held by more of its
 * turns is read among its newest this many, so what a search costs follows the query, not the
 * conversation's length. A conversation of a few hundred turns (a LoCoMo one) holds no term more
 * often, and is searched exactly as without it.
 */
export const TERM_SCAN = 1_000;

/**
 * The number of a conversation's turns holding a term, from a scan of at most `TERM_SCAN` of its
 * matches, newest first: the count itself when the scan ended before the limit; otherwise the
 * matches' density over the stretch of the log they span (from `oldestSeq` to `lastSeq`) carried
 * over the whole log, at least what was counted and at most the conversation's `rows`.
 */
export function estimatedRowsWith(counted: number, oldestSeq: number, lastSeq: number, rows: number): number {
  if (counted < TERM_SCAN) return counted;
  const span = Math.max(1, lastSeq - oldestSeq + 1);
  return Math.min(rows, Math.max(counted, Math.round((counted * lastSeq) / span)));
}

/** Okapi bm25's parameters as FTS5 fixes them (recall-rank's own bm25 over pages and entries uses them too). */
export const BM25_K1 = 1.2;
export const BM25_B = 0.75;
// FTS5 floors a term's idf at this (a term in more than half the rows would score negative).
const MIN_IDF = 1e-6;

// unicode61's tokens: letters, digits and private-use characters; a combining diacritic is removed
// and does not split a word. Everything else separates tokens.
const SEPARATORS = /[^\p{L}\p{N}\p{Co}\u0300-\u036f]+/u;
const DIACRITIC = /[\u0300-\u036f]/g;
const LATIN_ACCENTED = /[\u00c0-\u024f\u1e00-\u1eff]/g;

/**
 * Each word as the index stores it, once per isolate: a recall tokenizes some 150,000 characters
 * of candidates (a turn's text recurs in the context of its four neighbours), mostly the same
 * words again. Cleared whole when it reaches STEMS_KEPT words, so it stays small.
 */
const STEMS = new Map<string, string>();
const STEMS_KEPT = 50_000;

function stemOf(raw: string): string {
  const known = STEMS.get(raw);
  if (known !== undefined) return known;
  // A run of diacritics alone folds to "", which porterStem keeps: no token.
  const stem = porterStem(
    raw
      .replace(DIACRITIC, "")
      .toLowerCase()
      .replace(LATIN_ACCENTED, (c) => c.normalize("NFD").replace(DIACRITIC, "")),
  );
  if (STEMS.size >= STEMS_KEPT) STEMS.clear();
  STEMS.set(raw, stem);
  return stem;
}

/** `text` as unicode61 (remove_diacritics 2) and porter index it: its tokens, in order. */
export function indexTokens(text: string): string[] {
  const tokens: string[] = [];
  for (const raw of text.split(SEPARATORS)) {
    const stem = stemOf(raw);
    if (stem !== "") tokens.push(stem);
  }
  return tokens;
}

/** How often `phrase` (of two tokens or more: a term the tokenizer splits is a phrase to FTS5) occurs in `tokens`. */
function occurrences(phrase: readonly string[], tokens: readonly string[]): number {
  let n = 0;
  for (let i = 0; i + phrase.length <= tokens.length; i++) if (phrase.every((token, j) => tokens[i + j] === token)) n += 1;
  return n;
}

/**
 * The candidates' bm25 over their conversation, one score per candidate (higher is better; 0 for
 * one that holds no term), as FTS5's `bm25(turn_fts, …TURN_COLUMN_WEIGHTS)` would give over a
 * table of this conversation's turns only, the conversation's mean length taken as the
 * candidates'. `terms` are the query's terms as written (stemmed here, as the index stems the
 * query's); `counts.rowsWith` is keyed by them.
 */
export function conversationBm25(terms: readonly string[], candidates: readonly IndexedTurn[], counts: ConversationTermCounts): number[] {
  const query = queryOf(terms);
  const docs = candidates.map((turn) => docOf(query, turn));
  const average = docs.reduce((sum, d) => sum + d.length, 0) / Math.max(1, docs.length);
  return docs.map((doc) => {
    let score = 0;
    for (const [term, f] of doc.weighted) {
      const n = counts.rowsWith.get(term) ?? 0;
      const idf = Math.max(MIN_IDF, Math.log((counts.rows - n + 0.5) / (n + 0.5)));
      score += (idf * f * (BM25_K1 + 1)) / (f + BM25_K1 * (1 - BM25_B + (BM25_B * doc.length) / average));
    }
    return score;
  });
}

/** A query's terms as the index matches them: one-token terms by their stem, the rest as phrases. */
interface Query {
  readonly words: ReadonlyMap<string, readonly string[]>;
  readonly phrases: readonly { readonly term: string; readonly tokens: readonly string[] }[];
}

function queryOf(terms: readonly string[]): Query {
  const words = new Map<string, string[]>(); // a one-token term's stem → the terms stemming to it
  const phrases: { term: string; tokens: string[] }[] = [];
  for (const term of new Set(terms)) {
    const tokens = indexTokens(term);
    const [first] = tokens;
    if (first === undefined) continue; // no token: an empty phrase, which matches nothing
    if (tokens.length === 1) words.set(first, [...(words.get(first) ?? []), term]);
    else phrases.push({ term, tokens });
  }
  return { words, phrases };
}

/** A turn as bm25 counts it: its length in tokens, each term's weighted frequency, and the terms its own columns hold. */
function docOf(query: Query, turn: IndexedTurn): { length: number; weighted: Map<string, number>; own: Set<string> } {
  let length = 1; // the scope token
  const weighted = new Map<string, number>();
  const own = new Set<string>();
  for (const column of TURN_TERM_COLUMNS) {
    const tokens = indexTokens(turn[column]);
    const weight = TURN_COLUMN_WEIGHTS[column];
    const add = (term: string, f: number) => {
      if (f === 0) return;
      weighted.set(term, (weighted.get(term) ?? 0) + f * weight);
      if (column !== "context") own.add(term);
    };
    length += tokens.length;
    for (const token of tokens) for (const term of query.words.get(token) ?? []) add(term, 1);
    for (const { term, tokens: phrase } of query.phrases) add(term, occurrences(phrase, tokens));
  }
  return { length, weighted, own };
}

/**
 * How many of the conversation's turns hold each term in any column, context included, which is
 * what bm25's idf counts (`conversationBm25`), from what the index can count cheaply: the turns
 * that hold it in their own words (`own`, the index's rows). A turn's context is lent at search
 * time and not indexed, so the rest is measured on `sample` (the turns whose context the search
 * read whole): each term's count of turns holding it anywhere, per turn holding it in its own
 * words, scales `own`. Exact when the sample holds every turn with the term (a rare term, whose
 * matches the search reads around); an estimate from the sample's share for a common one.
 */
export function countsWithContext(terms: readonly string[], own: ConversationTermCounts, sample: readonly IndexedTurn[]): ConversationTermCounts {
  const query = queryOf(terms);
  const inOwn = new Map<string, number>();
  const anywhere = new Map<string, number>();
  for (const turn of sample) {
    const doc = docOf(query, turn);
    for (const term of doc.own) inOwn.set(term, (inOwn.get(term) ?? 0) + 1);
    for (const term of doc.weighted.keys()) anywhere.set(term, (anywhere.get(term) ?? 0) + 1);
  }
  const rowsWith = new Map<string, number>();
  for (const [term, n] of own.rowsWith) {
    const seen = inOwn.get(term) ?? 0;
    rowsWith.set(term, seen === 0 ? n : Math.min(own.rows, Math.round((n * (anywhere.get(term) ?? 0)) / seen)));
  }
  return { rows: own.rows, rowsWith };
}

/**
 * `hits` (the index's candidates, `indexed[i]` the indexed text of `hits[i]`) in the order of
 * their bm25 over their conversation, best first, ties the later turn first, as the index orders
 * them; each hit's `rank` is its new score negated (lower is better, as FTS5's bm25).
 */
export function byConversationBm25<T extends { readonly seq: number; readonly rank: number }>(
  terms: readonly string[],
  hits: readonly T[],
  indexed: readonly IndexedTurn[],
  counts: ConversationTermCounts,
): T[] {
  const scores = conversationBm25(terms, indexed, counts);
  return hits
    .map((hit, i) => ({ ...hit, rank: -(scores[i] ?? 0) }))
    .sort((a, b) => a.rank - b.rank || b.seq - a.seq);
}
