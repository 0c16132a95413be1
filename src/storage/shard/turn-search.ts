import type { RecalledTurnHit } from "../../core/recall-rank";
import { matchExpression, recallTerms } from "../../core/search-text";
import { SEARCH_SNIPPET, snippetOf } from "../../core/snippet";
import { byConversationBm25, countsWithContext, TURN_COLUMN_WEIGHTS } from "../../core/turn-bm25";
import type { PlacedTurn, Window } from "../../core/turn-context";
import { lendContext } from "../../core/turn-context";

/**
 * Recall over a conversation's exact turns: the turn index (`turn_terms`, migrations/shard/0023)
 * finds the turns whose own words match, `turn_index` says which rows are live turns the reader may
 * be served, core/turn-context lends each candidate the words of its neighbours, and core/turn-bm25
 * ranks them by bm25 over the conversation.
 *
 * One round trip of two statements: the matches with the places around each (and the text of every
 * turn among them, from the log), and how many rows the conversation's index holds and how many
 * hold each term. Both are scoped by the conversation's rowid range in the index, so what a search
 * costs follows the conversation and its matches, not the shard.
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

/** The conversation's rowid range in the index (`core/turn-terms`): its key's 32-bit block. */
const RANGE = `turn_terms.rowid BETWEEN (SELECT id << 32 FROM conversation_keys WHERE conversation_id = ?2) AND (SELECT (id << 32) | 4294967295 FROM conversation_keys WHERE conversation_id = ?2)`;

/** A live turn of the conversation the reader may be served (`t`), as of the view (?3 agents, ?4 sensitive, ?5 before). */
const SERVABLE = `t.seq IS NOT NULL AND t.deleted = 0 AND t.seq < ?5
  AND (t.role = 'user' OR (t.delivered = 1 AND t.author_id IN (SELECT value FROM json_each(?3))))
  AND (?4 = 1 OR (t.origin_sensitive = 0 AND t.edit_sensitive = 0))`;

/**
 * The live turn whose current text is the index row (the row's seq is `rowid & 0xFFFFFFFF`): the
 * turn whose winning edit it is, else the turn it placed when no edit won.
 */
const TURN_OF_ROW = `t.id = COALESCE(
    (SELECT e.id FROM turn_index e WHERE e.conversation_id = ?2 AND e.edit_seq = (turn_terms.rowid & 4294967295)),
    (SELECT o.id FROM turn_index o WHERE o.conversation_id = ?2 AND o.seq = (turn_terms.rowid & 4294967295) AND o.edit_seq IS NULL))`;

const SEARCH = `
WITH matches AS MATERIALIZED (
  SELECT t.seq AS seq, bm25(turn_terms, ${OWN_WEIGHTS}) AS rank
  FROM turn_terms CROSS JOIN turn_index t
  WHERE turn_terms MATCH ?1 AND ${RANGE} AND t.conversation_id = ?2 AND ${TURN_OF_ROW} AND ${SERVABLE}
  ORDER BY rank, t.seq DESC
  LIMIT ?6
),
windows AS MATERIALIZED (
  SELECT m.seq AS seq, m.rank AS rank,
    COALESCE((SELECT a.seq FROM turn_index a WHERE a.conversation_id = ?2 AND a.seq < m.seq ORDER BY a.seq DESC LIMIT 1 OFFSET ${WINDOW_PLACES - 1}), 0) AS lo,
    COALESCE((SELECT a.seq FROM turn_index a WHERE a.conversation_id = ?2 AND a.seq > m.seq ORDER BY a.seq LIMIT 1 OFFSET ${WINDOW_PLACES - 1}), 9007199254740991) AS hi
  FROM matches m
)
SELECT 'match' AS row, w.seq AS seq, w.lo AS lo, w.hi AS hi, NULL AS role, NULL AS message_id, NULL AS author_id, NULL AS author_name,
       NULL AS live, NULL AS servable, NULL AS lends, NULL AS text
FROM windows w
UNION ALL
SELECT 'turn', seq, NULL, NULL, role, message_id, author_id, author_name, live, servable, lends,
       CASE WHEN live OR lends THEN (SELECT json_extract(e.body, '$.text') FROM events e WHERE e.conversation_id = ?2 AND e.seq = text_seq) END
FROM (
  SELECT t.seq AS seq, t.role AS role, t.message_id AS message_id, t.author_id AS author_id, t.author_name AS author_name,
         COALESCE(t.edit_seq, t.seq) AS text_seq,
         t.deleted = 0 AND (t.role = 'user' OR t.delivered = 1) AS live,
         t.deleted = 0 AND t.seq < ?5 AND (t.role = 'user' OR (t.delivered = 1 AND t.author_id IN (SELECT value FROM json_each(?3))))
           AND (?4 = 1 OR (t.origin_sensitive = 0 AND t.edit_sensitive = 0)) AS servable,
         t.role = 'user' AND t.deleted = 0 AND t.origin_sensitive = 0 AND t.edit_sensitive = 0 AS lends
  FROM turn_index t
  WHERE t.conversation_id = ?2 AND t.seq IN (SELECT a.seq FROM windows w JOIN turn_index a ON a.conversation_id = ?2 AND a.seq BETWEEN w.lo AND w.hi)
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
  const [found, counted] = await db.batch<Row | { term: string | null; n: number }>([
    db.prepare(SEARCH).bind(match, conversationId, JSON.stringify(view.historyAgents), view.admitSensitive ? 1 : 0, view.beforeSeq ?? Number.MAX_SAFE_INTEGER, limit),
    // Each term is a run of letters, marks and digits (search-text), so quoting it makes a phrase.
    db
      .prepare(
        `SELECT NULL AS term, COALESCE((SELECT texts FROM conversations WHERE id = ?2), 0) AS n
         UNION ALL
         SELECT j.value, (SELECT count(*) FROM turn_terms WHERE turn_terms MATCH ('{${OWN_COLUMNS.join(" ")}} : "' || j.value || '"') AND ${RANGE})
         FROM json_each(?1) j`,
      )
      .bind(JSON.stringify(terms), conversationId),
  ]);
  const rows = (found?.results ?? []) as Row[];
  const counts = (counted?.results ?? []) as { term: string | null; n: number }[];
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
    rows: counts.find((c) => c.term === null)?.n ?? 0,
    rowsWith: new Map(counts.flatMap((c) => (c.term === null ? [] : [[c.term, c.n] as const]))),
  };
  const ranked = byConversationBm25(terms, hits, candidates.map((c) => c.indexed), countsWithContext(terms, own, sample));
  return ranked.slice(0, limit).map((hit) => ({ ...hit, snippet: snippetOf(hit.content, terms, SEARCH_SNIPPET) }));
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
