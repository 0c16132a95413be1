import type { RecalledPageHit } from "../../core/recall-rank";
import { matchExpression, recallTerms } from "../../core/search-text";
import type { PageHitRow } from "../page-terms";
import { pageHit } from "../page-terms";
import { agentKey, conversationKey } from "./keys";
import type { StoredText } from "./extracted-keys";
import { cited, HEAD_VERSION, pageOf, VERSION_CHARS, VERSION_TEXT, versionText } from "./extracted-keys";

/**
 * Every D1 statement that reads a conversation's extracted memory, on the conversation's shard
 * (migrations/shard/0016_conversation_memory.sql, 0035_memory_keyed.sql, 0036_memory_sources_keyed.sql,
 * 0037_memory_packed.sql). Extraction's writes are in storage/shard/extractions.
 *
 * Storage format: `extracted_versions` holds one immutable row per write of an extracted page,
 * numbered 1, 2, 3… per (conversation, agent, path), keyed by the conversation's and the agent's
 * integer keys (migrations/shard/0035), its text packed since 0037 (read with `versionText`, which
 * checks it against its hash); `extracted_pages` points at each page's newest row (the
 * schema's AFTER INSERT trigger keeps it), `conversation_memory_terms`
 * holds the terms of each live head (written by extraction, storage/page-terms);
 * `extracted_sources` names, per version (by its page's id), each fact key it set and the messages
 * of the conversation it came from, whose hashes are the log's (0036). Every statement here is
 * keyed by the conversation and the agent: whether a reader may be served what it returns is
 * src/core/memory-privacy.ts's to decide, which is why every row says which conversation it is kept with.
 */

export interface ConversationPage {
  readonly conversationId: string;
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

export interface ConversationPageSummary {
  readonly conversationId: string;
  readonly path: string;
  readonly version: number;
  readonly contentHash: string;
  readonly chars: number;
}

/** A search hit, with the conversation its page is kept with. */
export type ConversationPageHit = RecalledPageHit & { readonly conversationId: string };

interface VersionRow extends StoredText {
  path: string;
  version: number;
  chars: number;
  created_ms: number;
}

interface SummaryRow {
  path: string;
  version: number;
  content_hash: string;
  chars: number;
}

const toPage = (conversationId: string, agentId: string, row: VersionRow): ConversationPage => ({
  conversationId,
  agentId,
  path: row.path,
  version: row.version,
  content: versionText(row),
  contentHash: row.content_hash,
  chars: row.chars,
  createdAt: new Date(row.created_ms).toISOString(),
});

const toSummary =
  (conversationId: string) =>
  (row: SummaryRow): ConversationPageSummary => ({ conversationId, path: row.path, version: row.version, contentHash: row.content_hash, chars: row.chars });

/** A version's hash as the API shows it: lowercase hex of its 32 bytes. */
const HASH = "lower(hex(v.content_hash)) AS content_hash";
const VERSION_COLUMNS = `v.path AS path, v.version AS version, ${VERSION_TEXT}, ${HASH}, ${VERSION_CHARS} AS chars, v.created_ms AS created_ms`;
const SUMMARY_COLUMNS = `p.path AS path, p.version AS version, ${HASH}, ${VERSION_CHARS} AS chars`;
/** Each page joined to its newest version row. */
const HEAD = `extracted_pages p ${HEAD_VERSION}`;
/**
 * Each indexed (live) page's head and version, from its index row. CROSS JOIN keeps the index
 * outside: SQLite's own order walked the conversation's heads and ran the full-text query once per
 * row, at a cost that grew with every conversation on the shard.
 */
const INDEXED = `conversation_memory_terms CROSS JOIN extracted_pages p ON p.id = conversation_memory_terms.rowid ${HEAD_VERSION}`;

/** The columns of `conversation_memory_terms` a query's terms may match (never the scope). */
const PAGE_COLUMNS = ["path", "content", "grams"];

/** The MATCH argument: the conversation's scope token (?2 is its id) ANDed with the terms (?1). */
const SCOPED_MATCH = `conversation_memory_terms MATCH ('scope : "k' || COALESCE(${conversationKey("?2")}, 0) || '" AND ' || ?1) AND p.conversation_key = ${conversationKey("?2")}`;

/** bm25 of a page, path weighted above content (the first weight belongs to the scope column, which no term matches). */
const PAGE_BM25 = "bm25(conversation_memory_terms, 0.0, 2.0, 1.0, 1.0)";

/** A search hit's columns: the page and its bm25 (its snippet is computed from the content). */
const PAGE_HIT_COLUMNS = `(SELECT conversation_id FROM conversation_keys WHERE id = p.conversation_key) AS conversation_id, p.path AS path, p.version AS version, ${HASH}, ${VERSION_TEXT}, ${PAGE_BM25} AS rank`;

/** The current live version, or the given version if it is live; undefined for missing and deleted. */
export async function getConversationPage(db: D1Database, conversationId: string, agentId: string, path: string, version?: number): Promise<ConversationPage | undefined> {
  const statement =
    version === undefined
      ? db.prepare(`SELECT ${VERSION_COLUMNS} FROM ${HEAD} WHERE ${pageOf("p")} AND p.path = ?3 AND v.deleted = 0`).bind(conversationId, agentId, path)
      : db.prepare(`SELECT ${VERSION_COLUMNS} FROM extracted_versions v WHERE ${pageOf("v")} AND v.path = ?3 AND v.version = ?4 AND v.deleted = 0`).bind(conversationId, agentId, path, version);
  const row = await statement.first<VersionRow>();
  return row === null ? undefined : toPage(conversationId, agentId, row);
}

export const MAX_LIST_CONVERSATION_PAGES = 500;

/** The agent's live extracted pages of the conversation in path order, `limit` at a time after the path `after`. */
export async function listConversationPages(
  db: D1Database,
  conversationId: string,
  agentId: string,
  page: { readonly after?: string; readonly limit?: number } = {},
): Promise<ConversationPageSummary[]> {
  const limit = Math.min(Math.max(page.limit ?? MAX_LIST_CONVERSATION_PAGES, 1), MAX_LIST_CONVERSATION_PAGES);
  const { results } = await db
    .prepare(`SELECT ${SUMMARY_COLUMNS} FROM ${HEAD} WHERE ${pageOf("p")} AND p.path > ?3 AND v.deleted = 0 ORDER BY p.path LIMIT ?4`)
    .bind(conversationId, agentId, page.after ?? "", limit)
    .all<SummaryRow>();
  return results.map(toSummary(conversationId));
}

/** Which of these paths are live extracted pages of the agent in the conversation, each sought by its key. */
export async function liveConversationPagePaths(db: D1Database, conversationId: string, agentId: string, paths: readonly string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const { results } = await db
    .prepare(`SELECT p.path AS path FROM ${HEAD} WHERE ${pageOf("p")} AND p.path IN (SELECT value FROM json_each(?3)) AND v.deleted = 0`)
    .bind(conversationId, agentId, JSON.stringify(paths))
    .all<{ path: string }>();
  return new Set(results.map((row) => row.path));
}

export interface ConversationFactSource {
  readonly conversationId: string;
  readonly factKey: string;
  readonly messageId: string;
  readonly seq: number;
  readonly eventHash: string;
  readonly runId: string;
  /** The page version that set the fact to its value at the version asked for. */
  readonly version: number;
}

interface SourceRow {
  conversation_id: string;
  fact_key: string;
  message_id: string;
  seq: number;
  event_hash: string;
  run_id: string;
  version: number;
}

const toSource = (r: SourceRow): ConversationFactSource => ({
  conversationId: r.conversation_id,
  factKey: r.fact_key,
  messageId: r.message_id,
  seq: r.seq,
  eventHash: r.event_hash,
  runId: r.run_id,
  version: r.version,
});

/** A source row `m`'s columns as the API shows them, the cited event's hash read from the log (migrations/shard/0036). */
const SOURCE_COLUMNS = "m.fact_key AS fact_key, m.message_id AS message_id, m.seq AS seq, lower(hex(l.hash)) AS event_hash, m.run_id AS run_id, m.version AS version";

/**
 * Each fact key's sources at `version` of the page: the rows of the newest version at or below it
 * that set the key. The page's fact keys are walked one seek at a time in the primary key's order
 * (each key, then its newest version at or below `version`), so the read follows the page's facts
 * and their current sources, not every version the page ever had.
 */
export async function readConversationFactSources(db: D1Database, conversationId: string, agentId: string, path: string, version: number): Promise<ConversationFactSource[]> {
  const { results } = await db
    .prepare(
      `WITH RECURSIVE page (id, conversation_key) AS (
         SELECT p.id, p.conversation_key FROM extracted_pages p WHERE ${pageOf("p")} AND p.path = ?3
       ),
       facts (fact_key) AS (
         SELECT MIN(n.fact_key) FROM page, extracted_sources n WHERE n.page = page.id
         UNION ALL
         SELECT (SELECT MIN(n.fact_key) FROM page, extracted_sources n WHERE n.page = page.id AND n.fact_key > f.fact_key)
         FROM facts f WHERE f.fact_key IS NOT NULL
       ),
       newest (fact_key, version) AS (
         SELECT f.fact_key, (SELECT MAX(n.version) FROM page, extracted_sources n WHERE n.page = page.id AND n.fact_key = f.fact_key AND n.version <= ?4)
         FROM facts f WHERE f.fact_key IS NOT NULL
       )
       SELECT ?1 AS conversation_id, ${SOURCE_COLUMNS}
       FROM newest w
       CROSS JOIN page p
       CROSS JOIN extracted_sources m ON m.page = p.id AND m.fact_key = w.fact_key AND m.version = w.version
       ${cited("p.conversation_key")}
       ORDER BY m.fact_key, m.seq`,
    )
    .bind(conversationId, agentId, path, version)
    .all<SourceRow>();
  return results.map(toSource);
}

export interface ConversationFactRow extends ConversationFactSource {
  readonly path: string;
  /** The page's current version, whose text holds the fact's statement. */
  readonly pageVersion: number;
  readonly pageContent: string;
}

/** A fact's place in the order the inspector pages facts by. */
export interface FactCursor {
  readonly path: string;
  readonly factKey: string;
}

/**
 * One page of the agent's extracted facts of the conversation on its current pages, ordered by
 * (path, fact key): at most `facts` facts after `after` (keyed, so a page never repeats or skips a
 * fact), each with at most `sourcesPerFact` of its sources, oldest first. The fact keys are walked
 * one primary-key seek at a time, those of deleted pages passed over, until `facts` are kept; each
 * kept key's sources are read at its newest version at or below its page's, so the read follows the
 * facts listed, not every version their pages had.
 */
export async function readConversationFacts(
  db: D1Database,
  conversationId: string,
  agentId: string,
  after: FactCursor | undefined,
  facts: number,
  sourcesPerFact: number,
): Promise<ConversationFactRow[]> {
  // The fact keys in (path, fact key) order: the page's next key, else the first key of the page
  // after it by path (a page with none is a step with no key, passed over).
  const pageId = (path: string) => `(SELECT p.id FROM extracted_pages p WHERE ${pageOf("p")} AND p.path = ${path})`;
  const nextPath = (path: string) => `(SELECT MIN(p.path) FROM extracted_pages p WHERE ${pageOf("p")} AND p.path > ${path})`;
  const firstKey = (page: string, after: string) => `(SELECT MIN(n.fact_key) FROM extracted_sources n WHERE n.page = ${page} AND n.fact_key > ${after})`;
  const step = (path: string, key: string) =>
    `CASE WHEN ${firstKey(pageId(path), key)} IS NOT NULL THEN ${path} ELSE ${nextPath(path)} END,
     COALESCE(${firstKey(pageId(path), key)}, ${firstKey(pageId(nextPath(path)), "''")})`;
  const live = (path: string) => `EXISTS (SELECT 1 FROM ${HEAD} WHERE ${pageOf("p")} AND p.path = ${path} AND v.deleted = 0)`;
  const counts = (path: string, key: string) => `(${key} IS NOT NULL AND ${live(path)})`;
  const { results } = await db
    .prepare(
      `WITH RECURSIVE walk (path, fact_key, kept) AS (
         SELECT ${step("?3", "?4")}, 0
         UNION ALL
         SELECT ${step("w.path", "COALESCE(w.fact_key, '')")}, w.kept + ${counts("w.path", "w.fact_key")}
         FROM walk w WHERE w.path IS NOT NULL AND w.kept + ${counts("w.path", "w.fact_key")} < ?5
       ), facts AS (
         SELECT w.path, w.fact_key, p.id AS page, p.conversation_key AS conversation_key, p.version AS page_version, ${VERSION_TEXT}, ${HASH},
           (SELECT MAX(n.version) FROM extracted_sources n WHERE n.page = p.id AND n.fact_key = w.fact_key AND n.version <= p.version) AS version
         FROM walk w CROSS JOIN extracted_pages p ON ${pageOf("p")} AND p.path = w.path ${HEAD_VERSION}
         WHERE w.path IS NOT NULL AND w.fact_key IS NOT NULL AND v.deleted = 0
       ), sources AS (
         SELECT f.path, ${SOURCE_COLUMNS}, f.page_version, f.content, f.packed, f.content_hash,
           ROW_NUMBER() OVER (PARTITION BY f.path, f.fact_key ORDER BY m.seq) AS nth
         FROM facts f CROSS JOIN extracted_sources m ON m.page = f.page AND m.fact_key = f.fact_key AND m.version = f.version
         ${cited("f.conversation_key")}
       )
       SELECT ?1 AS conversation_id, path, fact_key, message_id, seq, event_hash, run_id, version, page_version, content, packed, content_hash
       FROM sources WHERE nth <= ?6
       ORDER BY path, fact_key, seq`,
    )
    .bind(conversationId, agentId, after?.path ?? "", after?.factKey ?? "", facts, sourcesPerFact)
    .all<SourceRow & StoredText & { path: string; page_version: number }>();
  // Each of a page's sources carries the page's text: it is unpacked once a page version.
  const texts = new Map<string, string>();
  const pageText = (r: StoredText & { path: string; page_version: number }): string => {
    const key = `${r.page_version}:${r.path}`;
    const text = texts.get(key) ?? versionText(r);
    texts.set(key, text);
    return text;
  };
  return results.map((r) => ({ ...toSource(r), path: r.path, pageVersion: r.page_version, pageContent: pageText(r) }));
}

/**
 * The agent's live extracted pages of the conversation matching free `text` (bm25 over path and
 * content, path weighted above content), whole, best first; nothing when no term qualifies.
 */
export async function searchConversationPages(db: D1Database, conversationId: string, agentId: string, text: string, limit: number): Promise<ConversationPageHit[]> {
  const match = matchExpression(text, PAGE_COLUMNS);
  if (match === undefined || limit <= 0) return [];
  const { results } = await db
    .prepare(
      `SELECT ${PAGE_HIT_COLUMNS}
       FROM ${INDEXED}
       WHERE ${SCOPED_MATCH} AND p.agent_key = ${agentKey("?3")} AND v.deleted = 0
       ORDER BY rank, p.path
       LIMIT ?4`,
    )
    .bind(match, conversationId, agentId, limit)
    .all<Omit<PageHitRow, "content"> & StoredText & { conversation_id: string }>();
  return results.map(toPageHit(recallTerms(text)));
}

const toPageHit =
  (terms: readonly string[]) =>
  (row: Omit<PageHitRow, "content"> & StoredText & { readonly conversation_id: string }): ConversationPageHit => ({
    ...pageHit({ ...row, content: versionText(row) }, terms),
    conversationId: row.conversation_id,
  });

/**
 * The agent's live extracted pages of its other conversations on this shard matching free `text`
 * (everything but `exceptConversationId`), whole, best first: what an agent that shares memory
 * across its conversations may be offered from this shard, before the privacy rule decides
 * (core/memory-privacy). Scoped in the index by the agent's token (`a` and its key in
 * `agent_keys`, migrations/shard/0018), so the search walks this agent's pages only.
 */
export async function searchSharedPages(db: D1Database, agentId: string, exceptConversationId: string, text: string, limit: number): Promise<ConversationPageHit[]> {
  const match = matchExpression(text, PAGE_COLUMNS);
  if (match === undefined || limit <= 0) return [];
  const { results } = await db
    .prepare(
      `SELECT ${PAGE_HIT_COLUMNS}
       FROM ${INDEXED}
       WHERE conversation_memory_terms MATCH ('scope : "a' || COALESCE((SELECT id FROM agent_keys WHERE agent_id = ?2), 0) || '" AND ' || ?1)
         AND p.agent_key = ${agentKey("?2")} AND p.conversation_key IS NOT ${conversationKey("?3")} AND v.deleted = 0
       ORDER BY rank, conversation_id, p.path
       LIMIT ?4`,
    )
    .bind(match, agentId, exceptConversationId, limit)
    .all<Omit<PageHitRow, "content"> & StoredText & { conversation_id: string }>();
  return results.map(toPageHit(recallTerms(text)));
}

/** Ranked candidates read before packing a packet's pages: small rows (no content). */
const RECALL_CANDIDATES = 200;

/** The agent's live extracted pages of the conversation most relevant to `text`, best first, without content: what a packet's recall packs. */
export async function rankConversationPages(db: D1Database, conversationId: string, agentId: string, text: string): Promise<ConversationPageSummary[]> {
  const match = matchExpression(text, PAGE_COLUMNS);
  if (match === undefined) return [];
  const { results } = await db
    .prepare(
      `SELECT ${SUMMARY_COLUMNS}
       FROM ${INDEXED}
       WHERE ${SCOPED_MATCH} AND p.agent_key = ${agentKey("?3")} AND v.deleted = 0
       ORDER BY ${PAGE_BM25}, p.path
       LIMIT ?4`,
    )
    .bind(match, conversationId, agentId, RECALL_CANDIDATES)
    .all<SummaryRow>();
  return results.map(toSummary(conversationId));
}

/**
 * The content of exactly these versions (immutable, so reading them after ranking is consistent
 * even if a page moved on meanwhile), by `<version>:<path>`. CROSS JOIN keeps the list outside, so
 * each version is sought by its key.
 */
export async function readConversationPageVersions(
  db: D1Database,
  conversationId: string,
  agentId: string,
  versions: readonly { readonly path: string; readonly version: number }[],
): Promise<Map<string, string>> {
  if (versions.length === 0) return new Map();
  const { results } = await db
    .prepare(
      `SELECT v.path AS path, v.version AS version, ${VERSION_TEXT}, ${HASH}
       FROM json_each(?3) j
       CROSS JOIN extracted_versions v
         ON ${pageOf("v")} AND v.path = json_extract(j.value, '$[0]') AND v.version = json_extract(j.value, '$[1]')`,
    )
    .bind(conversationId, agentId, JSON.stringify(versions.map((v) => [v.path, v.version])))
    .all<StoredText & { path: string; version: number }>();
  return new Map(results.map((row) => [`${row.version}:${row.path}`, versionText(row)]));
}
