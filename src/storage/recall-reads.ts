import type { RecalledPageHit, RecalledTurnHit } from "../core/recall-rank";
import { matchExpression, recallTerms } from "../core/search-text";
import { byConversationBm25, TURN_COLUMN_WEIGHTS, TURN_TERM_COLUMNS } from "../core/turn-bm25";
import { VOUCHED } from "./control/memory-pages";

/**
 * Recall's D1 statements: bm25 searches over an agent's live memory pages (`memory_fts`,
 * migrations/control/0016) and a conversation's live effective turns (`turn_fts`,
 * migrations/shard/0015). Both take free text and search with the MATCH expression
 * `matchExpression` (core/search-text) builds of it, never with the caller's text as syntax; text
 * with no searchable term finds nothing.
 *
 * A turn search is scoped in the index: its expression ANDs the conversation's scope token (`k` and
 * its key in `conversation_keys`) with the terms, so FTS5 walks that conversation's rows only, and
 * what it costs follows the conversation, not the shard. Both searches join the index CROSS: in
 * SQLite's own order the conversation's rows came first and the full-text query ran once per row.
 *
 * A turn search applies the reader's view in the statement itself: user turns always, replies only
 * of admitted history agents, sensitive turns only for a reader that admits them, so a row the
 * agent could not be served is never read into the Worker.
 */

/** Marks around matched terms in a snippet. */
const SNIPPET_OPEN = "«";
const SNIPPET_CLOSE = "»";
const SNIPPET_ELLIPSIS = "…";
/** Tokens of context in a snippet. */
const SNIPPET_TOKENS = 24;

/**
 * The columns a query's terms may match (`TURN_TERM_COLUMNS`, never `scope`) and their bm25 weights:
 * a turn's `context` (the words of the two turns on each side, migrations/shard/0021) counts half
 * its own text, as its author does.
 */
const TURN_COLUMNS = TURN_TERM_COLUMNS;
const TURN_WEIGHTS = Object.values(TURN_COLUMN_WEIGHTS).map((w) => w.toFixed(1)).join(", ");
const PAGE_COLUMNS = ["path", "content", "grams"];

/** Whose view a turn search takes: the agent's admitted history agents and sensitivity. */
export interface TurnView {
  readonly historyAgents: readonly string[];
  readonly admitSensitive: boolean;
  /** Only turns whose origin sequence is below this one (older than a served tail). */
  readonly beforeSeq?: number;
}

interface PageRow {
  path: string;
  version: number;
  content_hash: string;
  content: string;
  snippet: string;
  rank: number;
}

interface TurnRow {
  role: "user" | "assistant";
  message_id: string;
  seq: number;
  author_id: string;
  author_name: string | null;
  text: string;
  snippet: string;
  rank: number;
  idx_author: string;
  idx_text: string;
  idx_grams: string;
  idx_context: string;
}

/** The agent's live pages matching `match`, best first. Path outweighs content, as in compactor recall. */
export async function searchPages(db: D1Database, agentId: string, text: string, limit: number): Promise<RecalledPageHit[]> {
  const match = matchExpression(text, PAGE_COLUMNS);
  if (match === undefined) return [];
  const { results } = await db
    .prepare(
      `SELECT p.path AS path, p.version AS version, v.content_hash AS content_hash, v.content AS content,
              snippet(memory_fts, 2, ?3, ?4, ?5, ?6) AS snippet, bm25(memory_fts, 0.0, 2.0, 1.0, 1.0) AS rank
       FROM memory_fts
       CROSS JOIN memory_pages p ON p.id = memory_fts.rowid
       JOIN memory_page_versions v ON v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version
       WHERE memory_fts MATCH ?1 AND memory_fts.agent_id = ?2 AND v.deleted = 0 AND ${VOUCHED}
       ORDER BY rank, p.path
       LIMIT ?7`,
    )
    .bind(match, agentId, SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS, SNIPPET_TOKENS, limit)
    .all<PageRow>();
  return results.map((row) => ({
    type: "page" as const,
    path: row.path,
    version: row.version,
    contentHash: row.content_hash,
    content: row.content,
    snippet: row.snippet,
    rank: row.rank,
  }));
}

/** The conversation's scope in the turn index, as an FTS5 phrase (`k` and its key; none yet matches nothing). */
const SCOPE = `'scope : "k' || COALESCE((SELECT id FROM conversation_keys WHERE conversation_id = ?2), 0) || '"'`;

/**
 * The conversation's live turns matching `text` that `view` may be served, best first by bm25 over
 * the conversation's own turns (`core/turn-bm25`); ties the later turn first (a later statement
 * supersedes an earlier one). One round trip of two statements: the index's best `limit`
 * candidates with their indexed text, and how many of the conversation's turns the index holds
 * and how many hold each term (each count a scoped FTS5 query, so it walks this conversation only).
 */
export async function searchTurns(db: D1Database, conversationId: string, text: string, view: TurnView, limit: number): Promise<RecalledTurnHit[]> {
  const match = matchExpression(text, TURN_COLUMNS);
  if (match === undefined) return [];
  const terms = recallTerms(text);
  const [found, counted] = await db.batch<TurnRow | { term: string | null; n: number }>([
    db
      .prepare(
        `SELECT t.role AS role, t.message_id AS message_id, t.seq AS seq, t.author_id AS author_id, t.author_name AS author_name,
                COALESCE(t.edit_text, t.origin_text) AS text,
                snippet(turn_fts, 2, ?5, ?6, ?7, ?8) AS snippet, bm25(turn_fts, ${TURN_WEIGHTS}) AS rank,
                turn_fts.author AS idx_author, turn_fts.text AS idx_text, turn_fts.grams AS idx_grams, turn_fts.context AS idx_context
         FROM turn_fts
         CROSS JOIN turn_index t ON t.id = turn_fts.rowid
         WHERE turn_fts MATCH (${SCOPE} || ' AND ' || ?1)
           AND t.conversation_id = ?2
           AND t.seq IS NOT NULL AND t.deleted = 0 AND t.seq < ?9
           AND (t.role = 'user' OR (t.delivered = 1 AND t.author_id IN (SELECT value FROM json_each(?3))))
           AND (?4 = 1 OR (t.origin_sensitive = 0 AND t.edit_sensitive = 0))
         ORDER BY rank, t.seq DESC
         LIMIT ?10`,
      )
      .bind(
        match,
        conversationId,
        JSON.stringify(view.historyAgents),
        view.admitSensitive ? 1 : 0,
        SNIPPET_OPEN,
        SNIPPET_CLOSE,
        SNIPPET_ELLIPSIS,
        SNIPPET_TOKENS,
        view.beforeSeq ?? Number.MAX_SAFE_INTEGER,
        limit,
      ),
    // Each term is a run of letters, marks and digits (search-text), so quoting it makes a phrase.
    db
      .prepare(
        `SELECT NULL AS term, (SELECT count(*) FROM turn_fts WHERE turn_fts MATCH ${SCOPE}) AS n
         UNION ALL
         SELECT j.value, (SELECT count(*) FROM turn_fts WHERE turn_fts MATCH (${SCOPE} || ' AND {${TURN_COLUMNS.join(" ")}} : "' || j.value || '"'))
         FROM json_each(?1) j`,
      )
      .bind(JSON.stringify(terms), conversationId),
  ]);
  const rows = (found?.results ?? []) as TurnRow[];
  const counts = (counted?.results ?? []) as { term: string | null; n: number }[];
  const hits = rows.map((row) => ({
    type: "turn" as const,
    role: row.role,
    messageId: row.message_id,
    seq: row.seq,
    authorId: row.author_id,
    authorName: row.author_name,
    content: row.text,
    snippet: row.snippet,
    rank: row.rank,
  }));
  return byConversationBm25(
    terms,
    hits,
    rows.map((row) => ({ author: row.idx_author, text: row.idx_text, grams: row.idx_grams, context: row.idx_context })),
    {
      rows: counts.find((c) => c.term === null)?.n ?? 0,
      rowsWith: new Map(counts.flatMap((c) => (c.term === null ? [] : [[c.term, c.n] as const]))),
    },
  );
}
