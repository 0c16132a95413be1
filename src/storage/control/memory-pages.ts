import { sha256Hex } from "../../core/hash";
import { MAX_RECALL_TERMS, matchExpression } from "../../core/search-text";

/**
 * Every D1 statement on memory pages (migrations/0004_memory_pages.sql).
 *
 * Storage format: `memory_page_versions` holds one immutable row per write of a page, numbered
 * 1, 2, 3… per (agent, path) without gaps; a deletion is a tombstone row (deleted = 1, content
 * ''). `memory_pages` points at each page's newest row and `memory_fts` indexes the newest row
 * of each live page; the schema's AFTER INSERT trigger maintains both inside the inserting
 * statement, so this module only ever inserts versions and reads. A write decides its version
 * number and its idempotence in that single INSERT … SELECT, so two concurrent writers of one page
 * can neither collide on a number nor both record the same content.
 */

export interface MemoryPage {
  readonly agentId: string;
  readonly path: string;
  readonly version: number;
  readonly content: string;
  /** SHA-256 (hex) of the content's UTF-8 bytes. */
  readonly contentHash: string;
  /** JavaScript string length of the content. */
  readonly chars: number;
  readonly createdAt: string;
}

export type MemoryPageSummary = Pick<MemoryPage, "path" | "version" | "contentHash" | "chars">;

export interface PutPageResult {
  readonly version: number;
  readonly contentHash: string;
  /** False when the content equals the current live version's: nothing was written. */
  readonly created: boolean;
}

/** A page as it enters a compactor packet: exactly the version that was ranked, whole. */
export interface RecalledPage {
  readonly path: string;
  readonly version: number;
  readonly contentHash: string;
  readonly content: string;
}

interface VersionRow {
  agent_id: string;
  path: string;
  version: number;
  content: string;
  content_hash: string;
  chars: number;
  created_at: string;
}

interface SummaryRow {
  path: string;
  version: number;
  content_hash: string;
  chars: number;
}

function toPage(row: VersionRow): MemoryPage {
  return {
    agentId: row.agent_id,
    path: row.path,
    version: row.version,
    content: row.content,
    contentHash: row.content_hash,
    chars: row.chars,
    createdAt: row.created_at,
  };
}

function toSummary(row: SummaryRow): MemoryPageSummary {
  return { path: row.path, version: row.version, contentHash: row.content_hash, chars: row.chars };
}

const VERSION_COLUMNS = "v.agent_id, v.path, v.version, v.content, v.content_hash, v.chars, v.created_at";
/** Each page joined to its newest version row (live or tombstone). */
const HEAD = "memory_pages p JOIN memory_page_versions v ON v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version";

/**
 * A version `v` written once its agent was declared: only those are read or served. A page is
 * written only for a declared agent by a token that may change it (`api/access`
 * `declaredAgentInScope`), but versions stored before that rule, for an id nobody had declared yet,
 * were written by anyone holding `agent:*`: whoever declared the id later would have been served
 * them. Such a page stays stored and is served nowhere until someone who may change the agent
 * writes it again. An id with no declaration has no vouched version at all.
 */
export const VOUCHED = "v.created_at >= (SELECT MIN(d.created_at) FROM declarations d WHERE d.agent_id = v.agent_id)";

/**
 * Writes `content` as the page's next version, unless it is already the current live content.
 * Both statements run in one batch (one transaction), so the head read back is the one this write
 * produced or found, never a later writer's.
 */
export async function putPage(db: D1Database, agentId: string, path: string, content: string, now: Date): Promise<PutPageResult> {
  const contentHash = sha256Hex(content);
  const insert = db
    .prepare(
      `INSERT INTO memory_page_versions (agent_id, path, version, content, content_hash, chars, deleted, created_at)
       SELECT ?1, ?2, COALESCE((SELECT version FROM memory_pages WHERE agent_id = ?1 AND path = ?2), 0) + 1, ?3, ?4, ?5, 0, ?6
       WHERE NOT EXISTS (
         SELECT 1 FROM ${HEAD} WHERE p.agent_id = ?1 AND p.path = ?2 AND v.deleted = 0 AND v.content_hash = ?4 AND ${VOUCHED}
       )
       RETURNING version`,
    )
    .bind(agentId, path, content, contentHash, content.length, now.toISOString());
  const head = db
    .prepare(`SELECT p.version AS version, v.deleted AS deleted FROM ${HEAD} WHERE p.agent_id = ? AND p.path = ?`)
    .bind(agentId, path);
  const [inserted, current] = await db.batch<{ version: number; deleted?: number }>([insert, head]);
  const row = current?.results[0];
  if (row === undefined || row.deleted !== 0) throw new Error(`memory page ${agentId}/${path} has no live head after a put`);
  return { version: row.version, contentHash, created: (inserted?.results.length ?? 0) === 1 };
}

/** The current live version, or the given version if it is live; undefined for missing and deleted. */
export async function getPage(db: D1Database, agentId: string, path: string, version?: number): Promise<MemoryPage | undefined> {
  const statement =
    version === undefined
      ? db.prepare(`SELECT ${VERSION_COLUMNS} FROM ${HEAD} WHERE p.agent_id = ? AND p.path = ? AND v.deleted = 0 AND ${VOUCHED}`).bind(agentId, path)
      : db
          .prepare(
            `SELECT ${VERSION_COLUMNS} FROM memory_page_versions v
             WHERE v.agent_id = ? AND v.path = ? AND v.version = ? AND v.deleted = 0 AND ${VOUCHED}`,
          )
          .bind(agentId, path, version);
  const row = await statement.first<VersionRow>();
  return row === null ? undefined : toPage(row);
}

/**
 * Which of these paths are live pages of the agent (a memory reference may name one recall did not
 * find), each sought by its key: joined from the list, SQLite walked the agent's versions per path.
 */
export async function livePagePaths(db: D1Database, agentId: string, paths: readonly string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const { results } = await db
    .prepare(`SELECT p.path AS path FROM ${HEAD} WHERE p.agent_id = ?1 AND p.path IN (SELECT value FROM json_each(?2)) AND v.deleted = 0 AND ${VOUCHED}`)
    .bind(agentId, JSON.stringify(paths))
    .all<{ path: string }>();
  return new Set(results.map((row) => row.path));
}

export const MAX_LIST_PAGES = 500;

/** The agent's live pages in path order, `limit` at a time after the path `after`. */
export async function listPages(
  db: D1Database,
  agentId: string,
  page: { readonly after?: string; readonly limit?: number } = {},
): Promise<MemoryPageSummary[]> {
  const limit = Math.min(Math.max(page.limit ?? MAX_LIST_PAGES, 1), MAX_LIST_PAGES);
  const { results } = await db
    .prepare(
      `SELECT p.path AS path, p.version AS version, v.content_hash AS content_hash, v.chars AS chars
       FROM ${HEAD} WHERE p.agent_id = ? AND p.path > ? AND v.deleted = 0 AND ${VOUCHED} ORDER BY p.path LIMIT ?`,
    )
    .bind(agentId, page.after ?? "", limit)
    .all<SummaryRow>();
  return results.map(toSummary);
}

/**
 * Appends a tombstone after the current live version; its index row goes with it. Returns the
 * tombstone's version, or undefined when there is no live page to delete.
 */
export async function deletePage(db: D1Database, agentId: string, path: string, now: Date): Promise<{ version: number } | undefined> {
  const row = await db
    .prepare(
      `INSERT INTO memory_page_versions (agent_id, path, version, content, content_hash, chars, deleted, created_at)
       SELECT p.agent_id, p.path, p.version + 1, '', ?3, 0, 1, ?4 FROM ${HEAD}
       WHERE p.agent_id = ?1 AND p.path = ?2 AND v.deleted = 0
       RETURNING version`,
    )
    .bind(agentId, path, sha256Hex(""), now.toISOString())
    .first<{ version: number }>();
  return row ?? undefined;
}

// ---------------------------------------------------------------------------------------------
// Recall: the pages of one agent that best match a slice of conversation, within a budget.

/** Ranked candidates read before packing; small rows (no content), so a budget of a few large misses
 * can still be filled by smaller pages further down. */
const RECALL_CANDIDATES = 200;

/** The columns of `memory_fts` a query's terms may match (never the unindexed agent id). */
const PAGE_COLUMNS = ["path", "content", "grams"];

/**
 * An FTS5 MATCH expression for a slice of conversation over the pages' words, or undefined when no
 * term qualifies: its most frequent terms (`matchExpression`), OR-ed so that any one can recall a page.
 */
export const recallMatchExpression = (text: string, maxTerms = MAX_RECALL_TERMS): string | undefined => matchExpression(text, PAGE_COLUMNS, maxTerms);

/**
 * Takes pages in rank order while they fit: a page that would overflow the budget is skipped and
 * the next (possibly smaller) one tried, up to `maxPages`. The total never exceeds `budgetChars`.
 */
export function packWithinBudget<T extends { readonly chars: number }>(ranked: readonly T[], budgetChars: number, maxPages: number): T[] {
  const chosen: T[] = [];
  let used = 0;
  for (const page of ranked) {
    if (chosen.length >= maxPages) break;
    if (used + page.chars <= budgetChars) {
      chosen.push(page);
      used += page.chars;
    }
  }
  return chosen;
}

/**
 * The agent's live pages most relevant to `queryText` (bm25 over path and content), whole, in rank
 * order, totalling at most `budgetChars` (JavaScript string length) and at most `maxPages` pages.
 */
export async function recallPages(
  db: D1Database,
  agentId: string,
  queryText: string,
  budgetChars: number,
  maxPages: number,
): Promise<RecalledPage[]> {
  const match = recallMatchExpression(queryText);
  if (match === undefined || budgetChars <= 0 || maxPages <= 0) return [];
  // Path is weighted above content: a page's path is its author's one-line statement of what it
  // holds. The first weight belongs to the unindexed agent_id column, the last to the grams.
  const { results: ranked } = await db
    .prepare(
      `SELECT p.path AS path, p.version AS version, v.content_hash AS content_hash, v.chars AS chars
       FROM memory_fts
       CROSS JOIN memory_pages p ON p.id = memory_fts.rowid
       JOIN memory_page_versions v ON v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version
       WHERE memory_fts MATCH ?1 AND memory_fts.agent_id = ?2 AND v.deleted = 0 AND ${VOUCHED}
       ORDER BY bm25(memory_fts, 0.0, 2.0, 1.0, 1.0), p.path
       LIMIT ?3`,
    )
    .bind(match, agentId, RECALL_CANDIDATES)
    .all<SummaryRow>();
  const chosen = packWithinBudget(ranked.map(toSummary), budgetChars, maxPages);
  if (chosen.length === 0) return [];

  // Versions are immutable, so reading the content of exactly the ranked versions is consistent
  // even if a page was rewritten between the two statements. CROSS JOIN keeps the list outside:
  // each version is sought by its key, where SQLite's own order walked all the agent's versions.
  const { results: bodies } = await db
    .prepare(
      `SELECT v.path AS path, v.version AS version, v.content AS content
       FROM json_each(?2) j
       CROSS JOIN memory_page_versions v
         ON v.agent_id = ?1 AND v.path = json_extract(j.value, '$[0]') AND v.version = json_extract(j.value, '$[1]')`,
    )
    .bind(agentId, JSON.stringify(chosen.map((page) => [page.path, page.version])))
    .all<{ path: string; version: number; content: string }>();
  const contentOf = new Map(bodies.map((row) => [`${row.version}:${row.path}`, row.content]));
  return chosen.map((page) => {
    const content = contentOf.get(`${page.version}:${page.path}`);
    // The budget was packed on the stored length; a mismatch would mean a corrupt row, and a
    // packet must not silently exceed its budget.
    if (content === undefined || content.length !== page.chars) {
      throw new Error(`memory page ${agentId}/${page.path}@${page.version} does not match its stored length`);
    }
    return { path: page.path, version: page.version, contentHash: page.contentHash, content };
  });
}
