import { foldSearchText, searchForm } from "./search-text";
import type { IndexedTurn } from "./turn-bm25";

/**
 * A turn's context, lent at search time. In a real chat the answer is often a turn or two away
 * from the words a later question uses ("have you tried martial arts?" / "yes, kickboxing"), so a
 * turn is ranked with the words of the turns within two places of it in the log (its `context`,
 * weighted below its own words: core/turn-bm25). The index holds each turn's own words only
 * (migrations/shard/0023): a search reads the places around its candidates and lends the words
 * here, so an append never re-indexes its neighbours and no turn's text is stored again as another's
 * context. What a neighbour lends is the text (and grams) of a live message any reader of the
 * conversation may be served: a user's, not deleted, not sensitive; never a reply, whose readers
 * depend on the agent.
 *
 * Candidates are the index's own-word matches and, beside each that lends, the turns within two
 * places of it (whose context now holds the match's words), so a reply is found by the question
 * it answers. Each match comes with the places within four of it (`Window`), which covers the
 * context of every candidate it brings.
 */

/** A placed turn as a search reads it: what decides whether it is served, lends, and what it says. */
export interface PlacedTurn {
  readonly seq: number;
  /** Whether it is a live turn (placed, not deleted, a user's or a delivered reply): a row bm25 counts, whoever reads. */
  readonly live: boolean;
  /** Whether the reader may be served it (live, its role and sensitivity admitted by the view). */
  readonly servable: boolean;
  /** Whether it lends its words to its neighbours (a live, non-sensitive user message). */
  readonly lends: boolean;
  /** Its current text, raw; undefined for a turn that neither lends nor is served. */
  readonly text: string | undefined;
  /** The name a reader searches its author by (a user's name, else id; a reply's agent id). */
  readonly author: string;
}

/** An own-word match of the index and the places around it, in log order (it is among them). */
export interface Window {
  readonly match: number;
  readonly turns: readonly PlacedTurn[];
}

/** How far a neighbour lends, in places on either side. */
export const CONTEXT_PLACES = 2;

/** A candidate of a search and its columns as the index's bm25 counts them. */
export interface LentCandidate {
  readonly turn: PlacedTurn;
  readonly indexed: IndexedTurn;
}

/** A search's candidates, and the sample its counts are measured on (`turn-bm25` `countsWithContext`). */
export interface Lent {
  readonly candidates: readonly LentCandidate[];
  /** Every live turn within CONTEXT_PLACES of a match (whoever may read it), with its columns: each once. */
  readonly sample: readonly IndexedTurn[];
}

const lent = (turn: PlacedTurn): string => {
  if (!turn.lends || turn.text === undefined) return "";
  const form = searchForm(turn.text);
  return form.grams === "" ? form.text : `${form.text} ${form.grams}`;
};

/**
 * The candidates of a search over `windows` (in the index's order, best first): each servable match,
 * then each servable turn within CONTEXT_PLACES of a match that lends, each once, with its columns;
 * and the live turns within CONTEXT_PLACES of every match, the sample of its counts.
 */
export function lendContext(windows: readonly Window[]): Lent {
  const forms = new Map<number, string>();
  const lentBy = (turn: PlacedTurn): string => {
    let form = forms.get(turn.seq);
    if (form === undefined) forms.set(turn.seq, (form = lent(turn)));
    return form;
  };
  const columns = new Map<number, IndexedTurn>();
  const indexedAt = (turns: readonly PlacedTurn[], at: number, turn: PlacedTurn): IndexedTurn => {
    let indexed = columns.get(turn.seq);
    if (indexed !== undefined) return indexed;
    const context: string[] = [];
    for (let d = -CONTEXT_PLACES; d <= CONTEXT_PLACES; d++) {
      const neighbour = d === 0 ? undefined : turns[at + d];
      const words = neighbour === undefined ? "" : lentBy(neighbour);
      if (words !== "") context.push(words);
    }
    const own = searchForm(turn.text ?? "");
    indexed = { author: foldSearchText(turn.author), text: own.text, grams: own.grams, context: context.join(" ") };
    columns.set(turn.seq, indexed);
    return indexed;
  };
  const candidates: LentCandidate[] = [];
  const chosen = new Set<number>();
  const add = (turns: readonly PlacedTurn[], at: number): void => {
    const turn = turns[at];
    if (turn === undefined || !turn.servable || turn.text === undefined || chosen.has(turn.seq)) return;
    chosen.add(turn.seq);
    candidates.push({ turn, indexed: indexedAt(turns, at, turn) });
  };
  const placed = windows.map((w) => ({ window: w, at: w.turns.findIndex((t) => t.seq === w.match) }));
  for (const { window, at } of placed) if (at >= 0) add(window.turns, at);
  for (const { window, at } of placed) {
    if (at < 0 || window.turns[at]?.lends !== true) continue;
    for (let d = -CONTEXT_PLACES; d <= CONTEXT_PLACES; d++) if (d !== 0) add(window.turns, at + d);
  }
  const sample = new Map<number, IndexedTurn>();
  for (const { window, at } of placed) {
    if (at < 0) continue;
    for (let d = -CONTEXT_PLACES; d <= CONTEXT_PLACES; d++) {
      const turn = window.turns[at + d];
      if (turn?.live === true && turn.text !== undefined && !sample.has(turn.seq)) sample.set(turn.seq, indexedAt(window.turns, at + d, turn));
    }
  }
  return { candidates, sample: [...sample.values()] };
}
