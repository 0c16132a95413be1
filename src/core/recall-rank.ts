import { parsePage, shownId } from "./fact-merge";
import { contentWords, recallTerms, searchTerms } from "./search-text";

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

export interface RecalledPageHit {
  readonly type: "page";
  readonly path: string;
  readonly version: number;
  readonly contentHash: string;
  readonly content: string;
  readonly snippet: string;
  readonly rank: number;
  /**
   * The conversation an extracted page of another conversation was kept with, for an agent that
   * shares memory across its conversations (core/memory-privacy); absent for the conversation being
   * served and for a person's pages. Its messages and seqs are that conversation's, not this one's.
   */
  readonly elsewhere?: string;
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

/**
 * Reciprocal rank fusion of two disjoint lists: taking them in turn, the first list's item first at
 * equal rank. Recall puts turns first: the exact words before what was derived from them, and a
 * large page that barely matches cannot take the budget ahead of the turn that answers.
 */
export function fuseByRank<T>(first: readonly T[], second: readonly T[]): T[] {
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
 * One fact of an extracted page as recall serves it: its current statement with the message it
 * came from, one line. What it superseded stays on the page and in its
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
  /** That message's seq in the conversation's log; absent on lines written before it was recorded. */
  readonly seq?: number;
  /** Another conversation the fact was said in (its page's `elsewhere`); its message and seq are that conversation's. */
  readonly elsewhere?: string;
}

/** Which page an entry or a page is: its path, in the conversation it is kept with when that is another one. */
export const pageKey = (hit: { readonly path: string; readonly elsewhere?: string | undefined }): string => (hit.elsewhere === undefined ? hit.path : `${hit.elsewhere}\n${hit.path}`);

/** A page's entries; a page not in the extracted format (one a person wrote) has none and is served whole. */
export function entriesOf(page: RecalledPageHit): RecalledEntryHit[] {
  return [...parsePage(page.content)].map(([key, entry]) => ({
    type: "entry" as const,
    path: page.path,
    version: page.version,
    contentHash: page.contentHash,
    key,
    // The agent is served the statement and the message it came from; the rest of the line (its
    // ref, its position) is provenance, which the manifest carries (the page version and keys).
    content: `- ${key}: ${entry.current.statement} (msg ${entry.current.messageId}${page.elsewhere === undefined ? "" : ` in ${page.elsewhere}`})`,
    statement: entry.current.statement,
    messageId: entry.current.messageId,
    ...(entry.current.seq === undefined ? {} : { seq: entry.current.seq }),
    ...(page.elsewhere === undefined ? {} : { elsewhere: page.elsewhere }),
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
    const words = searchTerms(text);
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
 * over the conversation's index). The pages' side: the matched pages' entries, and every page
 * without entries (one a person wrote) as one document, ranked by bm25 over these documents
 * alone. An entry taken from a message of the served tail (at or after `beforeSeq`) is left to the
 * tail; one taken from a turn that is also a candidate stays a candidate, and packing serves
 * whichever of the two ranks first (`packMemory` skips the entry once its turn is chosen): an entry
 * earns its place where its turn would not be served. An entry names its message by seq
 * (extracted pages are one conversation's); a line written before seqs were recorded is matched by
 * message id, and left to a candidate turn that says what it says. The two lists are fused by
 * reciprocal rank: with two disjoint lists that is taking them in turn, a turn first at equal rank.
 */
export function rankCandidates(queryText: string, pages: readonly RecalledPageHit[], turns: readonly RecalledTurnHit[], beforeSeq = Number.POSITIVE_INFINITY): RecallCandidate[] {
  const turnWords = new Map<string, Set<string>[]>();
  for (const turn of turns) turnWords.set(shownId(turn.messageId), [...(turnWords.get(shownId(turn.messageId)) ?? []), wordsOf(turn)]);
  // Another conversation's fact has no turn here (its message id and seq name that conversation's log).
  const taken = (entry: RecalledEntryHit): boolean =>
    entry.elsewhere === undefined && (entry.seq === undefined ? (turnWords.get(entry.messageId) ?? []).some((words) => restates(wordsOf(entry), words)) : entry.seq >= beforeSeq);
  const fromPages = pages.flatMap((page): (RecalledEntryHit | RecalledPageHit)[] => {
    const entries = entriesOf(page);
    return entries.length === 0 ? [page] : entries.filter((entry) => !taken(entry));
  });
  const ranked = rankByTerms(
    recallTerms(queryText),
    fromPages.map((hit) => (hit.type === "entry" ? hit.statement : hit.content)),
  ).flatMap((i) => fromPages[i] ?? []);
  return fuseByRank<RecallCandidate>(turns, ranked);
}
