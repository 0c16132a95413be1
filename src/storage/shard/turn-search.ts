import type { RecalledTurnHit } from "../../core/recall-rank";
import { matchExpression, recallTerms } from "../../core/search-text";
import { SEARCH_SNIPPET, snippetOf } from "../../core/snippet";
import { byConversationBm25, countsWithContext, estimatedRowsWith, TERM_SCAN, TURN_COLUMN_WEIGHTS } from "../../core/turn-bm25";
import type { PlacedTurn, Window } from "../../core/turn-context";
import { lendContext } from "../../core/turn-context";
import { conversationKey } from "./keys";
import { logText } from "./log-texts";
import { isPlace, overlay, placeAuthorId, placeAuthorName, placeMessageId, placeRole } from "./turn-places";

/**
 * Recall over a conversation's exact turns: the turn index (`turn_terms`, migrations/shard/0023)
 * finds the turns whose own words match, the log and `turns` (turn-places) say which rows are live
 * turns the reader may be served, core/turn-context lends each candidate the words of its
 * neighbours, and core/turn-bm25 ranks them by bm25 over the conversation.
 *
 * Two statements, one after the other: how many rows the conversation's index holds and how many
 * hold each term, each term's matches read newest first and at most `TERM_SCAN` of them (so a
 * common term is counted, and then searched, among its newest matches only); then the matches
 * with the places around each (and the text of every turn among them, from the log). Both are
 * scoped by the conversation's rowid range in the index, so what a search costs follows the query
 * and its matches, never the shard, and never the conversation's length.
 */

/** Whose view a turn search takes: the agent's admitted history agents and sensitivity. */
export interface TurnView {
  readonly historyAgents: readonly string[];
  readonly admitSensitive: boolean;
  /** Only turns whose origin sequence is below this one (older than a served tail). */
  readonly beforeSeq?: number;
}

/** The index columns a query's terms match: a turn's own words (its context is lent, not indexed). */
const OWN_COLUMNS = ["author", "text", "grams"] as const;
/** bm25 weights of the own columns, for the index's first order of its matches. */
const OWN_WEIGHTS = OWN_COLUMNS.map((c) => TURN_COLUMN_WEIGHTS[c].toFixed(1)).join(", ");

/** Places read on either side of a match: its candidates' contexts reach two places past the two it lends to. */
const WINDOW_PLACES = 4;

/** The conversation's key (migrations/shard/0015), which the log, `turns` and the index's rowids are keyed by. */
const KEY = conversationKey("?2");

/** The conversation's rowid range in the index (`core/turn-terms`): its key's 32-bit block. */
const RANGE = `turn_terms.rowid BETWEEN (${KEY} << 32) AND ((${KEY} << 32) | 4294967295)`;

/** The index row's sequence number: the event whose text it holds. */
const ROW_SEQ = "(turn_terms.rowid & 4294967295)";

/**
 * A live turn of the conversation the reader may be served, its origin's row in the log `t` and
 * what came after it `o` (turn-places), as of the view (?3 agents, ?4 sensitive, ?5 before).
 */
const SERVABLE = `COALESCE(o.deleted, 0) = 0 AND t.seq < ?5
  AND (t.kind = 'source' OR (COALESCE(o.delivered, 0) = 1 AND ${placeAuthorId("t")} IN (SELECT value FROM json_each(?3))))
  AND (?4 = 1 OR (t.sensitive = 0 AND COALESCE(o.edit_sensitive, 0) = 0))`;

/**
 * The live turn whose current text is the index row: the turn whose winning edit it is (its
 * origin's sequence number, which `turns` keeps for an edit once its message is stored), else the
 * turn the row's own event places when no edit won. The edit's lookup names its index: without
 * statistics the planner would walk the conversation's primary-key range instead.
 */
const TURN_OF_ROW = `t.seq = COALESCE((SELECT e.seq FROM turns e INDEXED BY turns_by_edit WHERE e.conversation_key = ${KEY} AND e.edit_seq = ${ROW_SEQ}), ${ROW_SEQ})
  AND ${isPlace("t", "o")} AND (o.edit_seq IS NULL OR o.edit_seq = ${ROW_SEQ})`;

/** The index's matches of `match` within `rowids`, each with its place (`t`) and its bm25 over the shard's table. */
const ranked = (match: string, rowids: string): string => `SELECT t.seq AS seq, bm25(turn_terms, ${OWN_WEIGHTS}) AS rank
  FROM turn_terms CROSS JOIN log t ${overlay("t", "o")}
  WHERE turn_terms MATCH ${match} AND ${rowids} AND t.conversation_key = ${KEY} AND ${TURN_OF_ROW} AND ${SERVABLE}`;

/**
 * The events a window reads on either side of its match, at most: between two turns lie the events
 * that are no turn (each compactor's skipped run, deliveries, corrections), as many as a writer
 * appends, so the walk for neighbours stops this far out and a window reads at most twice this
 * many rows of the log, at any length of the conversation and whatever lies between its turns.
 */
const WINDOW_EVENTS = 1_024;

/**
 * The sequence number of the `WINDOW_PLACES`-th place before (`<`) or after (`>`) match `m`, walking
 * the log's key no further than `WINDOW_EVENTS`; where there is none, that far (or the log's start).
 */
const placeFrom = (direction: "<" | ">"): string => {
  const [reach, within, order] = direction === "<" ? [`MAX(0, m.seq - ${WINDOW_EVENTS})`, ">=", "DESC"] : [`m.seq + ${WINDOW_EVENTS}`, "<=", ""];
  return `COALESCE((SELECT a.seq FROM log a ${overlay("a", "ao")}
    WHERE a.conversation_key = ${KEY} AND a.seq ${direction} m.seq AND a.seq ${within} ${reach} AND ${isPlace("a", "ao")}
    ORDER BY a.seq ${order} LIMIT 1 OFFSET ${WINDOW_PLACES - 1}), ${reach})`;
};

/** From sequence number ?7 to the end of the conversation's block of the index. */
const RECENT = `turn_terms.rowid BETWEEN ((${KEY} << 32) | ?7) AND ((${KEY} << 32) | 4294967295)`;

/**
 * The matches the search ranks: every match of the query (?1) when no term is held by
 * `TERM_SCAN` turns or more; otherwise the matches among the query's newest `TERM_SCAN` (from ?7),
 * and every match of its rarer terms (?8, when it has any), so a turn holding a rare word is found
 * however old it is while a common one costs a bounded read.
 */
const MATCHES = {
  exact: `${ranked("?1", RANGE)} ORDER BY rank, t.seq DESC LIMIT ?6`,
  recent: `${ranked("?1", RECENT)} ORDER BY rank, t.seq DESC LIMIT ?6`,
  recentAndRare: `SELECT seq, MIN(rank) AS rank FROM (${ranked("?1", RECENT)} UNION ALL ${ranked("?8", RANGE)}) GROUP BY seq ORDER BY rank, seq DESC LIMIT ?6`,
} as const;

const search = (matches: string): string => `
WITH matches AS MATERIALIZED (
  ${matches}
),
windows AS MATERIALIZED (
  SELECT m.seq AS seq, m.rank AS rank, ${placeFrom("<")} AS lo, ${placeFrom(">")} AS hi
  FROM matches m
)
SELECT 'match' AS row, w.seq AS seq, w.lo AS lo, w.hi AS hi, NULL AS role, NULL AS message_id, NULL AS author_id, NULL AS author_name,
       NULL AS live, NULL AS servable, NULL AS lends, NULL AS text
FROM windows w
UNION ALL
SELECT 'turn', seq, NULL, NULL, role, message_id, author_id, author_name, live, servable, lends,
       CASE WHEN live OR lends THEN (SELECT ${logText("e")} FROM log e WHERE e.conversation_key = ${KEY} AND e.seq = text_seq) END
FROM (
  SELECT t.seq AS seq, ${placeRole("t")} AS role, ${placeMessageId("t")} AS message_id, ${placeAuthorId("t")} AS author_id, ${placeAuthorName("t")} AS author_name,
         COALESCE(o.edit_seq, t.seq) AS text_seq,
         COALESCE(o.deleted, 0) = 0 AND (t.kind = 'source' OR COALESCE(o.delivered, 0) = 1) AS live,
         ${SERVABLE} AS servable,
         t.kind = 'source' AND COALESCE(o.deleted, 0) = 0 AND t.sensitive = 0 AND COALESCE(o.edit_sensitive, 0) = 0 AS lends
  FROM log t ${overlay("t", "o")}
  WHERE t.conversation_key = ${KEY} AND t.seq IN (SELECT a.seq FROM windows w JOIN log a ON a.conversation_key = ${KEY} AND a.seq BETWEEN w.lo AND w.hi) AND ${isPlace("t", "o")}
)`;

interface Row {
  row: "match" | "turn";
  seq: number;
  lo: number | null;
  hi: number | null;
  role: "user" | "assistant" | null;
  message_id: string | null;
  author_id: string | null;
  author_name: string | null;
  live: number | null;
  servable: number | null;
  lends: number | null;
  text: string | null;
}

type Turn = PlacedTurn & { readonly role: "user" | "assistant"; readonly messageId: string; readonly authorId: string; readonly authorName: string | null };

/**
 * The conversation's live turns matching `text` that `view` may be served, best first by bm25 over
 * the conversation's turns with their lent context (`core/turn-bm25`); ties the later turn first.
 * The index's best `limit` own-word matches and the turns beside them are ranked; `limit` are returned.
 */
export async function searchTurns(db: D1Database, conversationId: string, text: string, view: TurnView, limit: number): Promise<RecalledTurnHit[]> {
  const match = matchExpression(text, OWN_COLUMNS);
  if (match === undefined || limit <= 0) return [];
  const terms = recallTerms(text);
  const scanned = await scanTerms(db, conversationId, terms, match);
  const rare = terms.filter((term) => (scanned.terms.get(term)?.counted ?? 0) < TERM_SCAN);
  // Every match is read when no term is common (each is fewer than `TERM_SCAN`, however many the
  // query's together); otherwise the query's newest, and every match of the rare terms.
  const exact = scanned.recentSeq === null || rare.length === terms.length;
  const rareMatch = exact || rare.length === 0 ? undefined : matchExpression(rare.join(" "), OWN_COLUMNS, rare.length);
  const matches = exact ? MATCHES.exact : rareMatch === undefined ? MATCHES.recent : MATCHES.recentAndRare;
  const found = await db
    .prepare(search(matches))
    .bind(
      match,
      conversationId,
      JSON.stringify(view.historyAgents),
      view.admitSensitive ? 1 : 0,
      view.beforeSeq ?? Number.MAX_SAFE_INTEGER,
      limit,
      ...(exact ? [] : [scanned.recentSeq]),
      ...(rareMatch === undefined ? [] : [rareMatch]),
    )
    .all<Row>();
  const rows = found.results;
  const placed = new Map<number, Turn>();
  for (const row of rows) {
    if (row.row !== "turn" || row.role === null) continue;
    placed.set(row.seq, {
      seq: row.seq,
      live: row.live === 1,
      servable: row.servable === 1,
      lends: row.lends === 1,
      text: row.text ?? undefined,
      author: row.author_name ?? row.author_id ?? "",
      role: row.role,
      messageId: row.message_id ?? "",
      authorId: row.author_id ?? "",
      authorName: row.author_name,
    });
  }
  const ordered = [...placed.values()].sort((a, b) => a.seq - b.seq);
  const windows: Window[] = rows.filter((row) => row.row === "match").map((row) => ({ match: row.seq, turns: between(ordered, row.lo ?? 0, row.hi ?? Number.MAX_SAFE_INTEGER) }));
  const { candidates, sample } = lendContext(windows);
  const hits = candidates.map(({ turn }) => {
    const t = turn as Turn;
    return { type: "turn" as const, role: t.role, messageId: t.messageId, seq: t.seq, authorId: t.authorId, authorName: t.authorName, content: t.text ?? "", snippet: "", rank: 0 };
  });
  const own = {
    rows: scanned.rows,
    rowsWith: new Map([...scanned.terms].map(([term, { counted, oldestSeq }]) => [term, estimatedRowsWith(counted, oldestSeq, scanned.lastSeq, scanned.rows)] as const)),
  };
  const ranked = byConversationBm25(terms, hits, candidates.map((c) => c.indexed), countsWithContext(terms, own, sample));
  return ranked.slice(0, limit).map((hit) => ({ ...hit, snippet: snippetOf(hit.content, terms, SEARCH_SNIPPET) }));
}

/** What a search knows of its terms before it ranks: one statement, each term's matches read newest first, at most `TERM_SCAN` of them. */
interface TermScan {
  /** The conversation's indexed turns (its text-bearing events) and its high-water mark. */
  readonly rows: number;
  readonly lastSeq: number;
  /** Each term's matches counted (at most `TERM_SCAN`) and the oldest sequence number among them. */
  readonly terms: ReadonlyMap<string, { readonly counted: number; readonly oldestSeq: number }>;
  /** The sequence number of the query's `TERM_SCAN`-th newest match; null when it has fewer. */
  readonly recentSeq: number | null;
}

async function scanTerms(db: D1Database, conversationId: string, terms: readonly string[], match: string): Promise<TermScan> {
  // Each term is a run of letters, marks and digits (search-text), so quoting it makes a phrase.
  const { results } = await db
    .prepare(
      // One scan per term, newest first: its length and its oldest sequence number (materialized,
      // so the scan is not repeated for each of its two fields).
      `WITH scans AS MATERIALIZED (
         SELECT j.value AS term,
           (SELECT json_array(count(*), min(r)) FROM (
              SELECT turn_terms.rowid & 4294967295 AS r FROM turn_terms
              WHERE turn_terms MATCH ('{${OWN_COLUMNS.join(" ")}} : "' || j.value || '"') AND ${RANGE}
              ORDER BY turn_terms.rowid DESC LIMIT ?4)) AS scan
         FROM json_each(?1) j
       )
       SELECT 0 AS kind, NULL AS term, COALESCE((SELECT texts FROM conversations WHERE id = ?2), 0) AS a, COALESCE((SELECT last_seq FROM conversations WHERE id = ?2), 0) AS b
       UNION ALL
       SELECT 1, NULL, (SELECT turn_terms.rowid & 4294967295 FROM turn_terms WHERE turn_terms MATCH ?3 AND ${RANGE} ORDER BY turn_terms.rowid DESC LIMIT 1 OFFSET ?4 - 1), NULL
       UNION ALL
       SELECT 2, term, json_extract(scan, '$[0]'), json_extract(scan, '$[1]') FROM scans`,
    )
    .bind(JSON.stringify(terms), conversationId, match, TERM_SCAN)
    .all<{ kind: 0 | 1 | 2; term: string | null; a: number | null; b: number | null }>();
  const head = results.find((r) => r.kind === 0);
  return {
    rows: head?.a ?? 0,
    lastSeq: head?.b ?? 0,
    recentSeq: results.find((r) => r.kind === 1)?.a ?? null,
    terms: new Map(results.flatMap((r) => (r.kind === 2 && r.term !== null ? [[r.term, { counted: r.a ?? 0, oldestSeq: r.b ?? 0 }] as const] : []))),
  };
}

/** The turns of `ordered` (by seq) with lo ≤ seq ≤ hi. */
function between<T extends { readonly seq: number }>(ordered: readonly T[], lo: number, hi: number): T[] {
  let start = 0;
  for (let end = ordered.length; start < end; ) {
    const mid = (start + end) >> 1;
    if ((ordered[mid]?.seq ?? Infinity) < lo) start = mid + 1;
    else end = mid;
  }
  const found: T[] = [];
  for (let i = start; i < ordered.length && (ordered[i]?.seq ?? Infinity) <= hi; i++) found.push(ordered[i] as T);
  return found;
}
