import { parsePage, renderEntry, shownId } from "./fact-merge";

/**
 * Recall's ranking, pure: the words a query searches with, an extracted page cut into the entries
 * that answer the query, and one order over the two stores.
 *
 * The stores are searched apart (`storage/recall-store`), and their bm25 scores are not comparable:
 * a page gathers every statement about one subject, so it matches a question's subject words many
 * times and outscores the one turn that answers it. So what is served from a page is its entries
 * that match (each fact's current statement with the ones it superseded), ranked among themselves,
 * and the two lists are fused by rank position (reciprocal rank fusion, which needs no common scale),
 * not by score.
 */

/** At most this many terms go into one search: enough for a slice's topics, bounded in cost. */
export const MAX_RECALL_TERMS = 32;
/** Shorter words are mostly function words, and match too much to rank anything. */
const MIN_TERM_CHARS = 3;
/** Longer "words" are pasted ids or base64, not topics; the cap also bounds the query's size. */
const MAX_TERM_CHARS = 64;

/**
 * Common English words of at least MIN_TERM_CHARS letters. Dropping them keeps the term cap for
 * words that say what a text is about; bm25 would rank them low anyway, but they would still let
 * every page into the candidates.
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

// Letters, marks and digits: the characters FTS5's unicode61 tokenizer keeps in tokens.
const WORD = /[\p{L}\p{M}\p{N}]+/gu;

/** Lower-cased words of `text` a search can use, stop words and too short or too long ones left out, in order. */
export function searchWords(text: string): string[] {
  const words: string[] = [];
  for (const [word] of text.toLowerCase().matchAll(WORD)) {
    const length = [...word].length;
    if (length >= MIN_TERM_CHARS && length <= MAX_TERM_CHARS && !STOP_WORDS.has(word)) words.push(word);
  }
  return words;
}

/** The distinct words of `text` that carry content (stop words left out, numbers kept): what novelty is judged on. */
export function contentWords(text: string): Set<string> {
  const words = new Set<string>();
  for (const [word] of text.toLowerCase().matchAll(WORD)) if (!STOP_WORDS.has(word) && ([...word].length >= MIN_TERM_CHARS || /\p{N}/u.test(word))) words.add(word);
  return words;
}

/** Share of an item's content words an earlier one must hold for the item to add nothing new. */
const RESTATED_SHARE = 0.75;

/** Whether `words` (an item's) are mostly in `earlier` (another's): the same message again, by whoever, or a fact and the turn it was taken from. */
export function restates(words: ReadonlySet<string>, earlier: ReadonlySet<string>): boolean {
  let shared = 0;
  for (const word of words) if (earlier.has(word)) shared += 1;
  return words.size > 0 && shared >= RESTATED_SHARE * words.size;
}

/** What an entry or a turn says, as content words: a turn's with its author's name. */
export function wordsOf(hit: RecalledEntryHit | RecalledTurnHit): Set<string> {
  return contentWords(hit.type === "entry" ? hit.statement : `${hit.authorName ?? hit.authorId} ${hit.content}`);
}

/** The text's most frequent search words (ties: first seen), at most `maxTerms`. */
export function recallTerms(text: string, maxTerms = MAX_RECALL_TERMS): string[] {
  const seen = new Map<string, { count: number; first: number }>();
  for (const word of searchWords(text)) {
    const entry = seen.get(word);
    if (entry === undefined) seen.set(word, { count: 1, first: seen.size });
    else entry.count += 1;
  }
  return [...seen]
    .sort(([, a], [, b]) => b.count - a.count || a.first - b.first)
    .slice(0, Math.max(0, maxTerms))
    .map(([term]) => term);
}

export interface RecalledPageHit {
  readonly type: "page";
  readonly path: string;
  readonly version: number;
  readonly contentHash: string;
  readonly content: string;
  readonly snippet: string;
  readonly rank: number;
}

export interface RecalledTurnHit {
  readonly type: "turn";
  readonly role: "user" | "assistant";
  readonly messageId: string;
  readonly seq: number;
  readonly authorId: string;
  readonly authorName: string | null;
  readonly content: string;
  readonly snippet: string;
  readonly rank: number;
}

export type RecallHit = RecalledPageHit | RecalledTurnHit;

/**
 * A search's results: turns and pages (whole), fused by rank position (a turn first at equal rank),
 * at most `limit`. The two indexes score on their own statistics, so their bm25 values are not compared.
 */
export function mergeHits(pages: readonly RecalledPageHit[], turns: readonly RecalledTurnHit[], limit: number): RecallHit[] {
  return interleave<RecallHit>(turns, pages).slice(0, Math.max(0, limit));
}

/**
 * Reciprocal rank fusion of two disjoint lists: taking them in turn, the first list's item first at
 * equal rank. Recall puts turns first: the exact words before what was derived from them, and a
 * large page that barely matches cannot take the budget ahead of the turn that answers.
 */
function interleave<T>(first: readonly T[], second: readonly T[]): T[] {
  const fused: T[] = [];
  for (let i = 0; i < Math.max(first.length, second.length); i++) {
    const a = first[i];
    const b = second[i];
    if (a !== undefined) fused.push(a);
    if (b !== undefined) fused.push(b);
  }
  return fused;
}

/**
 * One fact of an extracted page as recall serves it: its current statement, in the page's own line
 * format (with its message and source reference). What it superseded stays on the page and in its
 * history; the agent is served the value that holds.
 */
export interface RecalledEntryHit {
  readonly type: "entry";
  readonly path: string;
  readonly version: number;
  readonly contentHash: string;
  readonly key: string;
  /** The entry's current line as the page holds it. */
  readonly content: string;
  /** Its current statement. */
  readonly statement: string;
  /** The message the statement came from, as the page shows it. */
  readonly messageId: string;
}

/** A page's entries; a page not in the extracted format (one a person wrote) has none and is served whole. */
export function entriesOf(page: RecalledPageHit): RecalledEntryHit[] {
  return [...parsePage(page.content)].map(([key, entry]) => ({
    type: "entry" as const,
    path: page.path,
    version: page.version,
    contentHash: page.contentHash,
    key,
    content: renderEntry(key, { current: entry.current, previous: [] }),
    statement: entry.current.statement,
    messageId: entry.current.messageId,
  }));
}

// Okapi bm25's usual parameters, FTS5's too.
const K1 = 1.2;
const B = 0.75;

/**
 * Indexes of `documents` that contain a query term, best bm25 first over these documents' own
 * statistics; ties go to the later document (on a page, the more recently updated fact).
 */
export function rankByTerms(query: readonly string[], documents: readonly string[]): number[] {
  const terms = new Set(query);
  const docs = documents.map((text) => {
    const words = searchWords(text);
    const tf = new Map<string, number>();
    for (const word of words) if (terms.has(word)) tf.set(word, (tf.get(word) ?? 0) + 1);
    return { tf, length: words.length };
  });
  const average = docs.reduce((n, d) => n + d.length, 0) / Math.max(1, docs.length);
  const df = new Map<string, number>();
  for (const d of docs) for (const word of d.tf.keys()) df.set(word, (df.get(word) ?? 0) + 1);
  const scored = docs.flatMap((d, i) => {
    let score = 0;
    for (const [word, f] of d.tf) {
      const n = df.get(word) ?? 0;
      const idf = Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
      score += (idf * f * (K1 + 1)) / (f + K1 * (1 - B + (B * d.length) / Math.max(1, average)));
    }
    return score > 0 ? [{ i, score }] : [];
  });
  return scored.sort((x, y) => y.score - x.score || y.i - x.i).map((s) => s.i);
}

/** What recall serves: entries of extracted pages, pages served whole, and turns. */
export type RecallCandidate = RecalledEntryHit | RecalledPageHit | RecalledTurnHit;

/**
 * The served candidates for `queryText`, best first. The turns' side: in their store's order (bm25
 * over the whole conversation's index). The pages' side: the matched pages' entries, and every
 * page without entries (one a person wrote) as one document, ranked by bm25 over these documents
 * alone; an entry taken from one of the candidate turns is left to that turn, which holds the exact
 * words (a message id names a message only within its conversation, so the turn must also say
 * what the entry says). The two are fused by reciprocal rank: with two disjoint lists that is
 * taking them in turn, a turn first at equal rank.
 */
export function rankCandidates(queryText: string, pages: readonly RecalledPageHit[], turns: readonly RecalledTurnHit[]): RecallCandidate[] {
  const turnWords = new Map<string, Set<string>[]>();
  for (const turn of turns) turnWords.set(shownId(turn.messageId), [...(turnWords.get(shownId(turn.messageId)) ?? []), wordsOf(turn)]);
  const taken = (entry: RecalledEntryHit): boolean => (turnWords.get(entry.messageId) ?? []).some((words) => restates(wordsOf(entry), words));
  const fromPages = pages.flatMap((page): (RecalledEntryHit | RecalledPageHit)[] => {
    const entries = entriesOf(page);
    return entries.length === 0 ? [page] : entries.filter((entry) => !taken(entry));
  });
  const ranked = rankByTerms(
    recallTerms(queryText),
    fromPages.map((hit) => (hit.type === "entry" ? hit.statement : hit.content)),
  ).flatMap((i) => fromPages[i] ?? []);
  return interleave<RecallCandidate>(turns, ranked);
}
