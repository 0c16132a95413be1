import { parsePage, shownId } from "./fact-merge";
import { contentWords, recallTerms, searchTerms } from "./search-text";
import { BM25_B as B, BM25_K1 as K1 } from "./turn-bm25";

/**
 * Recall's ranking, pure: the words a query searches with, an extracted page cut into the entries
 * that answer the query, and one order over the two stores.
 *
 * The stores are searched apart (`storage/recall-reads`), and their bm25 scores are not comparable:
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
  /** The seqs of the statements this one superseded (the page's "previously" lines that name one). */
  readonly supersedes: readonly number[];
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
    supersedes: entry.previous.flatMap((line) => (line.seq === undefined ? [] : [line.seq])),
  }));
}

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

/**
 * How much a turn's saying the query's words itself counts beside its bm25 rank (`byOwnWords`).
 * Chosen on LoCoMo's eight conversations (bench §12) with a replica of the turn index run offline
 * over the same turns and questions: weights from 0.3 to 1.0 served within half a point of each
 * other (0.6 the most, 90.7%), 2.0 a point less, and the index's order alone 89.8%.
 */
export const OWN_WORDS_WEIGHT = 0.6;

/**
 * The turns in the order recall serves them: their bm25 order over their conversation
 * (`turn-bm25`), which also counts a turn's neighbours' words (its `context`), nudged towards the
 * turns that say the query's terms themselves. Each turn scores its bm25 as a share of the best
 * candidate's plus OWN_WORDS_WEIGHT times the share of the query's terms among its own words (its
 * author's name and text); ties keep the given order. Both parts are shares, so the nudge does not
 * depend on the scale of bm25, which varies with the conversation's length and the query.
 */
export function byOwnWords(terms: readonly string[], turns: readonly RecalledTurnHit[]): RecalledTurnHit[] {
  const query = new Set(terms);
  const best = -(turns[0]?.rank ?? 0);
  const scored = turns.map((turn, i) => {
    const own = new Set(searchTerms(`${turn.authorName ?? turn.authorId} ${turn.content}`));
    let said = 0;
    for (const term of query) if (own.has(term)) said += 1;
    return { turn, i, score: (best > 0 ? -turn.rank / best : 1) + (OWN_WORDS_WEIGHT * said) / Math.max(1, query.size) };
  });
  return scored.sort((a, b) => b.score - a.score || a.i - b.i).map((s) => s.turn);
}

/** What recall serves: entries of extracted pages, pages served whole, and turns. */
export type RecallCandidate = RecalledEntryHit | RecalledPageHit | RecalledTurnHit;

/**
 * The served candidates for `queryText`, best first: the conversation's turns in their store's
 * order (bm25 over the conversation's turns), nudged towards those that say the query's words (`byOwnWords`),
 * are the spine, and what was extracted from them is served only where
 * it adds what the turns do not, so recall is never worse than the turn index alone at the same
 * budget (measured on LoCoMo, bench §12: interleaving the offline extractor's entries with the turns
 * gave them half the places for statements the turns already held, and served 3 points fewer).
 *
 * An entry of this conversation's extracted pages:
 * - taken from a message of the served tail (at or after `beforeSeq`) is left to the tail;
 * - that supersedes a candidate turn (the page's "previously" names the turn's seq) stands in
 *   front of it, at its rank: the agent reads the value that holds where it would have read the
 *   stale one, and packing skips the stale turn when the entry says what it said;
 * - taken from a candidate turn is that turn: the turn stands, the entry adds nothing;
 * - anything else (its message matched nothing, as a model's paraphrase may not) comes after every
 *   turn, ranked by bm25 among themselves, filling what budget the turns leave.
 * A line written before seqs were recorded is matched by message id to a candidate turn that says
 * what it says. Pages a person wrote (served whole) and facts of the agent's other conversations
 * (an agent that shares memory; none of them can be a turn here) are a second list, fused with the
 * spine by rank, a turn first at equal rank: they hold what no turn of this conversation can.
 */
export function rankCandidates(queryText: string, pages: readonly RecalledPageHit[], turns: readonly RecalledTurnHit[], beforeSeq = Number.POSITIVE_INFINITY): RecallCandidate[] {
  const terms = recallTerms(queryText);
  const candidateSeqs = new Set(turns.map((turn) => turn.seq));
  const isTurn = (entry: RecalledEntryHit): boolean =>
    entry.seq === undefined
      ? turns.some((turn) => shownId(turn.messageId) === entry.messageId && restates(wordsOf(entry), wordsOf(turn)))
      : candidateSeqs.has(entry.seq);

  const inFront = new Map<number, RecalledEntryHit[]>();
  const unanchored: RecalledEntryHit[] = [];
  const second: (RecalledEntryHit | RecalledPageHit)[] = [];
  for (const page of pages) {
    const entries = entriesOf(page);
    if (entries.length === 0) second.push(page);
    for (const entry of entries) {
      if (entry.elsewhere !== undefined) second.push(entry);
      else if (entry.seq !== undefined && entry.seq >= beforeSeq) continue;
      else {
        const stale = turns.find((turn) => entry.supersedes.includes(turn.seq) && turn.seq !== entry.seq);
        if (stale !== undefined) inFront.set(stale.seq, [...(inFront.get(stale.seq) ?? []), entry]);
        else if (!isTurn(entry)) unanchored.push(entry);
      }
    }
  }
  const spine = byOwnWords(terms, turns).flatMap((turn): RecallCandidate[] => [...(inFront.get(turn.seq) ?? []), turn]);
  const byTerms = <T extends RecalledEntryHit | RecalledPageHit>(hits: readonly T[]): T[] =>
    rankByTerms(
      terms,
      hits.map((hit) => (hit.type === "entry" ? hit.statement : hit.content)),
    ).flatMap((i) => hits[i] ?? []);
  return [...fuseByRank<RecallCandidate>(spine, byTerms(second)), ...byTerms(unanchored)];
}
