import { sha256Hex } from "../core/hash";

/**
 * Every D1 statement of memory extraction (migrations/0012_memory_provenance.sql): the merged
 * versions of extracted pages with their provenance, the completed extraction runs, and the event
 * hashes a slice's facts cite.
 *
 * A merged version is written only over the head it was merged from (optimistic concurrency: two
 * extractions of one agent's page, from two conversations, cannot both build on the same version
 * and lose one's facts), and its provenance rows go in the same batch, bound to that exact version
 * by its content hash, so a version never exists without its sources nor sources without it.
 */

export interface PageHead {
  readonly version: number;
  /** The live content, or undefined when the head is a tombstone. */
  readonly content: string | undefined;
}

/** The page's newest version (live or deleted), or undefined for a page never written. */
export async function readPageHead(db: D1Database, agentId: string, path: string): Promise<PageHead | undefined> {
  const row = await db
    .prepare(
      `SELECT v.version AS version, v.content AS content, v.deleted AS deleted
       FROM memory_pages p JOIN memory_page_versions v ON v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version
       WHERE p.agent_id = ? AND p.path = ?`,
    )
    .bind(agentId, path)
    .first<{ version: number; content: string; deleted: number }>();
  return row === null ? undefined : { version: row.version, content: row.deleted === 0 ? row.content : undefined };
}

export interface ProvenanceRow {
  readonly factKey: string;
  readonly conversationId: string;
  readonly messageId: string;
  readonly seq: number;
  readonly eventHash: string;
  readonly runId: string;
}

/**
 * Writes `content` as version `expectedVersion + 1` of the page with its provenance, if the page's
 * head is still `expectedVersion` (0: no page yet). `conflict` when another writer moved the head.
 */
export async function writeMergedVersion(
  db: D1Database,
  page: { readonly agentId: string; readonly path: string; readonly expectedVersion: number; readonly content: string; readonly provenance: readonly ProvenanceRow[] },
  now: Date,
): Promise<"written" | "conflict"> {
  const { agentId, path, expectedVersion, content } = page;
  const contentHash = sha256Hex(content);
  const version = expectedVersion + 1;
  const insert = db
    .prepare(
      `INSERT INTO memory_page_versions (agent_id, path, version, content, content_hash, chars, deleted, created_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, 0, ?7
       WHERE COALESCE((SELECT version FROM memory_pages WHERE agent_id = ?1 AND path = ?2), 0) = ?3 - 1
       RETURNING version`,
    )
    .bind(agentId, path, version, content, contentHash, content.length, now.toISOString());
  const sources = db
    .prepare(
      `INSERT OR IGNORE INTO memory_provenance (agent_id, path, version, fact_key, conversation_id, message_id, seq, event_hash, run_id)
       SELECT ?1, ?2, ?3, json_extract(j.value, '$.factKey'), json_extract(j.value, '$.conversationId'), json_extract(j.value, '$.messageId'),
              json_extract(j.value, '$.seq'), json_extract(j.value, '$.eventHash'), json_extract(j.value, '$.runId')
       FROM json_each(?5) j
       WHERE EXISTS (SELECT 1 FROM memory_page_versions v WHERE v.agent_id = ?1 AND v.path = ?2 AND v.version = ?3 AND v.content_hash = ?4)`,
    )
    .bind(agentId, path, version, contentHash, JSON.stringify(page.provenance));
  const [inserted] = await db.batch([insert, sources]);
  return (inserted?.results.length ?? 0) === 1 ? "written" : "conflict";
}

export interface FactSourceRecord extends ProvenanceRow {
  /** The page version that set the fact to its value at the version asked for. */
  readonly version: number;
}

/** Each fact key's sources at `version` of the page: the rows of the newest version at or below it that set the key. */
export async function readFactSources(db: D1Database, agentId: string, path: string, version: number): Promise<FactSourceRecord[]> {
  const { results } = await db
    .prepare(
      `SELECT m.fact_key, m.conversation_id, m.message_id, m.seq, m.event_hash, m.run_id, m.version
       FROM memory_provenance m
       WHERE m.agent_id = ?1 AND m.path = ?2 AND m.version = (
         SELECT MAX(version) FROM memory_provenance WHERE agent_id = ?1 AND path = ?2 AND fact_key = m.fact_key AND version <= ?3
       )
       ORDER BY m.fact_key, m.seq`,
    )
    .bind(agentId, path, version)
    .all<{ fact_key: string; conversation_id: string; message_id: string; seq: number; event_hash: string; run_id: string; version: number }>();
  return results.map((r) => ({ factKey: r.fact_key, conversationId: r.conversation_id, messageId: r.message_id, seq: r.seq, eventHash: r.event_hash, runId: r.run_id, version: r.version }));
}

export interface ExtractionRunRecord {
  readonly runId: string;
  readonly conversationId: string;
  readonly agentId: string;
  readonly boundaryId: string;
  readonly provider: string;
  readonly model: string;
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number } | null;
  readonly facts: number;
  readonly versionsWritten: number;
}

/** Records a completed extraction once; a redelivered job's second record is ignored. */
export async function recordExtractionRun(db: D1Database, run: ExtractionRunRecord, now: Date): Promise<void> {
  await db
    .prepare(
      `INSERT OR IGNORE INTO extraction_runs (run_id, conversation_id, agent_id, boundary_id, provider, model, input_tokens, output_tokens, facts, versions_written, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(run.runId, run.conversationId, run.agentId, run.boundaryId, run.provider, run.model, run.usage?.inputTokens ?? null, run.usage?.outputTokens ?? null, run.facts, run.versionsWritten, now.toISOString())
    .run();
}

/**
 * The hashes of a conversation's events at these sequence numbers, each sought by its key (`IN`
 * over the list: joined from the list, SQLite walked the conversation once per number).
 */
export async function readEventHashes(db: D1Database, conversationId: string, seqs: readonly number[]): Promise<Map<number, string>> {
  if (seqs.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT seq, hash FROM events WHERE conversation_id = ?1 AND seq IN (SELECT value FROM json_each(?2))")
    .bind(conversationId, JSON.stringify(seqs))
    .all<{ seq: number; hash: string }>();
  return new Map(results.map((r) => [r.seq, r.hash]));
}

export interface ConversationFactRow {
  readonly path: string;
  readonly factKey: string;
  /** The page's current version, whose text holds the fact's statement. */
  readonly pageVersion: number;
  readonly pageContent: string;
  readonly messageId: string;
  readonly seq: number;
  readonly eventHash: string;
  readonly runId: string;
}

/**
 * The agent's extracted facts whose current value came from this conversation, with their sources,
 * at most `limit` source rows: what the inspector shows beside the conversation. A fact whose
 * newest value came from another conversation is not one of them.
 */
export async function readConversationFacts(db: D1Database, agentId: string, conversationId: string, limit: number): Promise<ConversationFactRow[]> {
  const { results } = await db
    .prepare(
      `SELECT m.path, m.fact_key, p.version AS page_version, v.content, m.message_id, m.seq, m.event_hash, m.run_id
       FROM memory_provenance m
       JOIN memory_pages p ON p.agent_id = m.agent_id AND p.path = m.path
       JOIN memory_page_versions v ON v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version AND v.deleted = 0
       WHERE m.agent_id = ?1 AND m.conversation_id = ?2 AND m.version = (
         SELECT MAX(version) FROM memory_provenance WHERE agent_id = ?1 AND path = m.path AND fact_key = m.fact_key AND version <= p.version
       )
       ORDER BY m.path, m.fact_key, m.seq LIMIT ?3`,
    )
    .bind(agentId, conversationId, limit)
    .all<{ path: string; fact_key: string; page_version: number; content: string; message_id: string; seq: number; event_hash: string; run_id: string }>();
  return results.map((r) => ({ path: r.path, factKey: r.fact_key, pageVersion: r.page_version, pageContent: r.content, messageId: r.message_id, seq: r.seq, eventHash: r.event_hash, runId: r.run_id }));
}
