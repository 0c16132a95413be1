import { sha256Hex } from "../../core/hash";
import type { RecalledPageHit } from "../../core/recall-rank";
import { MAX_RECALL_TERMS, matchExpression, recallTerms } from "../../core/search-text";
import type { PageHitRow, PageTermsStore, PreviousHead } from "../page-terms";
import { pageHit, pageTermStatements } from "../page-terms";

/**
 * Every D1 statement on memory pages (migrations/control/0004_memory_pages.sql, 0019_memory_terms.sql).
 *
 * Storage format: `memory_page_versions` holds one immutable row per write of a page, numbered
 * 1, 2, 3… per (agent, path) without gaps; a deletion is a tombstone row (deleted = 1, content
 * ''). `memory_pages` points at each page's newest row (the schema's AFTER INSERT trigger keeps
 * it), and `memory_terms` holds the terms of each live head, written with the version
 * (storage/page-terms). A write reads the head, then decides its version number and its idempotence
 * in one INSERT … SELECT over that head, so two concurrent writers of one page can neither collide
 * on a number nor both record the same content.
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

/** The agent's pages in the word index (migrations/control/0019): the agent's scope token, `a` and its key. */
const PAGE_TERMS: PageTermsStore = {
  terms: "memory_terms",
  heads: "memory_pages",
  versions: "memory_page_versions",
  keyed: (alias) => `${alias}.agent_id = ?1`,
  storedHash: (hex) => hex,
  scope: "('a' || (SELECT id FROM agent_keys WHERE agent_id = ?1))",
};

/** Attempts of a write whose version another writer took between its read and its write. */
const WRITE_ATTEMPTS = 5;

interface HeadRow {
  version: number;
  content: string;
  content_hash: string;
  deleted: number;
}

/** The page's newest version (live or tombstone), as a write replaces it. */
async function readHeadForWrite(db: D1Database, agentId: string, path: string): Promise<PreviousHead | undefined> {
  const row = await db
    .prepare(`SELECT v.version AS version, v.content AS content, v.content_hash AS content_hash, v.deleted AS deleted FROM ${HEAD} WHERE p.agent_id = ? AND p.path = ?`)
    .bind(agentId, path)
    .first<HeadRow>();
  return row === null ? undefined : { version: row.version, content: row.deleted === 0 ? row.content : undefined, contentHash: row.content_hash };
}

/**
 * Writes `content` as the page's next version, unless it is already the current live content.
 * The head is read first (its terms leave the word index with it), and the version is written only
 * over that head, in one batch with its terms; a writer that lost the race to another reads again.
 * The head read back in the batch is the one this write produced or found.
 */
export async function putPage(db: D1Database, agentId: string, path: string, content: string, now: Date): Promise<PutPageResult> {
  const contentHash = sha256Hex(content);
  for (let attempt = 1; ; attempt++) {
    const previous = await readHeadForWrite(db, agentId, path);
    const version = (previous?.version ?? 0) + 1;
    const insert = db
      .prepare(
        `INSERT INTO memory_page_versions (agent_id, path, version, content, content_hash, chars, deleted, created_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, 0, ?7
         WHERE COALESCE((SELECT version FROM memory_pages WHERE agent_id = ?1 AND path = ?2), 0) = ?3 - 1
           AND NOT EXISTS (SELECT 1 FROM ${HEAD} WHERE p.agent_id = ?1 AND p.path = ?2 AND v.deleted = 0 AND v.content_hash = ?5 AND ${VOUCHED})
         RETURNING version`,
      )
      .bind(agentId, path, version, content, contentHash, content.length, now.toISOString());
    const head = db.prepare(`SELECT p.version AS version, v.deleted AS deleted, v.content_hash AS content_hash FROM ${HEAD} WHERE p.agent_id = ? AND p.path = ?`).bind(agentId, path);
    const terms = pageTermStatements(db, PAGE_TERMS, [agentId], [{ path, version, contentHash, content, previous }]);
    const results = await db.batch<{ version: number; deleted?: number; content_hash?: string }>([insert, ...terms, head]);
    const row = results.at(-1)?.results[0];
    if ((results[0]?.results.length ?? 0) === 1) return { version, contentHash, created: true };
    // Not written: the content is already the live head's, or another writer moved the head.
    if (row !== undefined && row.deleted === 0 && row.content_hash === contentHash) return { version: row.version, contentHash, created: false };
    if (attempt >= WRITE_ATTEMPTS) throw new Error(`memory page ${agentId}/${path}: its head kept moving during a put`);
  }
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
 * Appends a tombstone after the current live version; its terms leave the word index with it.
 * Returns the tombstone's version, or undefined when there is no live page to delete.
 */
export async function deletePage(db: D1Database, agentId: string, path: string, now: Date): Promise<{ version: number } | undefined> {
  const contentHash = sha256Hex("");
  for (let attempt = 1; ; attempt++) {
    const previous = await readHeadForWrite(db, agentId, path);
    if (previous?.content === undefined) return undefined;
    const version = previous.version + 1;
    const tombstone = db
      .prepare(
        `INSERT INTO memory_page_versions (agent_id, path, version, content, content_hash, chars, deleted, created_at)
         SELECT p.agent_id, p.path, p.version + 1, '', ?3, 0, 1, ?4 FROM ${HEAD}
         WHERE p.agent_id = ?1 AND p.path = ?2 AND v.deleted = 0 AND p.version = ?5
         RETURNING version`,
      )
      .bind(agentId, path, contentHash, now.toISOString(), previous.version);
    const terms = pageTermStatements(db, PAGE_TERMS, [agentId], [{ path, version, contentHash, content: undefined, previous }]);
    const [written] = await db.batch<{ version: number }>([tombstone, ...terms]);
    if ((written?.results.length ?? 0) === 1) return { version };
    if (attempt >= WRITE_ATTEMPTS) throw new Error(`memory page ${agentId}/${path}: its head kept moving during a delete`);
  }
}

// ---------------------------------------------------------------------------------------------
// Recall: the pages of one agent that best match a slice of conversation, within a budget.

/** Ranked candidates read before packing; small rows (no content), so a budget of a few large misses
 * can still be filled by smaller pages further down. */
const RECALL_CANDIDATES = 200;

/** The columns of `memory_terms` a query's terms may match (never the agent's scope). */
const PAGE_COLUMNS = ["path", "content", "grams"];

/** The agent's pages in the word index: its scope token (?2 is its id) ANDed with the terms (?1). */
const AGENT_MATCH = `memory_terms MATCH ('scope : "a' || COALESCE((SELECT id FROM agent_keys WHERE agent_id = ?2), 0) || '" AND ' || ?1)`;
/** Each indexed page's head and version; CROSS JOIN keeps the index outside (each head sought by its key). */
const INDEXED = "memory_terms CROSS JOIN memory_pages p ON p.id = memory_terms.rowid JOIN memory_page_versions v ON v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version";
/** bm25's weights: the scope (no term matches it), then path above content: a page's path is its author's one-line statement of what it holds. */
const PAGE_BM25 = "bm25(memory_terms, 0.0, 2.0, 1.0, 1.0)";

/**
 * An FTS5 MATCH expression for a slice of conversation over the pages' words, or undefined when no
 * term qualifies: its most frequent terms (`matchExpression`), OR-ed so that any one can recall a page.
 */
export const recallMatchExpression = (text: string, maxTerms = MAX_RECALL_TERMS): string | undefined => matchExpression(text, PAGE_COLUMNS, maxTerms);

/** The agent's live pages matching free `text`, best first (bm25, path above content), each with a snippet of its content. */
export async function searchPages(db: D1Database, agentId: string, text: string, limit: number): Promise<RecalledPageHit[]> {
  const match = recallMatchExpression(text);
  if (match === undefined || limit <= 0) return [];
  const { results } = await db
    .prepare(
      `SELECT p.path AS path, p.version AS version, v.content_hash AS content_hash, v.content AS content, ${PAGE_BM25} AS rank
       FROM ${INDEXED}
       WHERE ${AGENT_MATCH} AND p.agent_id = ?2 AND v.deleted = 0 AND ${VOUCHED}
       ORDER BY rank, p.path
       LIMIT ?3`,
    )
    .bind(match, agentId, limit)
    .all<PageHitRow>();
  const terms = recallTerms(text);
  return results.map((row) => pageHit(row, terms));
}

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
  const { results: ranked } = await db
    .prepare(
      `SELECT p.path AS path, p.version AS version, v.content_hash AS content_hash, v.chars AS chars
       FROM ${INDEXED}
       WHERE ${AGENT_MATCH} AND p.agent_id = ?2 AND v.deleted = 0 AND ${VOUCHED}
       ORDER BY ${PAGE_BM25}, p.path
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
