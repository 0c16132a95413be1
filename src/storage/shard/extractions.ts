import { sha256Hex } from "../../core/hash";
import type { ExtractionEvidence } from "../../core/wakeups";
import type { PageTermsStore } from "../page-terms";
import { pageTermStatements } from "../page-terms";

/**
 * Every D1 statement of memory extraction, all on the conversation's shard
 * (migrations/shard/0016_conversation_memory.sql, 0012_memory_provenance.sql): the merged versions
 * of the conversation's extracted pages with their provenance, the completed extraction runs, what
 * the shard shows of an extraction still owed, and the event hashes a slice's facts cite. The reads
 * of those pages are storage/shard/conversation-memory's.
 *
 * A merged version is written only over the head it was merged from (optimistic concurrency: two
 * extractions of one page cannot both build on the same version and lose one's facts), and its
 * provenance rows go in the same batch, bound to that exact version by its content hash, so a
 * version never exists without its sources nor sources without it.
 */

export interface PageHead {
  readonly version: number;
  /** The live content, or undefined when the head is a tombstone. */
  readonly content: string | undefined;
  readonly contentHash: string;
}

/** The page's newest version (live or deleted), or undefined for a page never written. */
export async function readPageHead(db: D1Database, conversationId: string, agentId: string, path: string): Promise<PageHead | undefined> {
  const row = await db
    .prepare(
      `SELECT v.version AS version, v.content AS content, v.content_hash AS content_hash, v.deleted AS deleted
       FROM conversation_memory_pages p
       JOIN conversation_memory_versions v ON v.conversation_id = p.conversation_id AND v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version
       WHERE p.conversation_id = ? AND p.agent_id = ? AND p.path = ?`,
    )
    .bind(conversationId, agentId, path)
    .first<{ version: number; content: string; content_hash: string; deleted: number }>();
  return row === null ? undefined : { version: row.version, content: row.deleted === 0 ? row.content : undefined, contentHash: row.content_hash };
}

/** One source of a fact a version set; the conversation is the page's. */
export interface ProvenanceRow {
  readonly factKey: string;
  readonly messageId: string;
  readonly seq: number;
  readonly eventHash: string;
  readonly runId: string;
}

/** A conversation's extracted pages in the word index: the conversation's and the agent's scope tokens (migrations/shard/0018). */
const PAGE_TERMS: PageTermsStore = {
  terms: "conversation_memory_terms",
  heads: "conversation_memory_pages",
  versions: "conversation_memory_versions",
  keys: ["conversation_id", "agent_id"],
  scope: "('k' || (SELECT id FROM conversation_keys WHERE conversation_id = ?1) || ' a' || (SELECT id FROM agent_keys WHERE agent_id = ?2))",
};

/**
 * Writes `content` as the version after `head` (undefined: no page yet) of the conversation's page
 * with its provenance and its terms (the head's leave the word index), if the page's head is still
 * `head`. `conflict` when another writer moved the head.
 */
export async function writeMergedVersion(
  db: D1Database,
  page: {
    readonly conversationId: string;
    readonly agentId: string;
    readonly path: string;
    readonly head: PageHead | undefined;
    readonly content: string;
    readonly provenance: readonly ProvenanceRow[];
  },
  now: Date,
): Promise<"written" | "conflict"> {
  const { conversationId, agentId, path, head, content } = page;
  const contentHash = sha256Hex(content);
  const version = (head?.version ?? 0) + 1;
  const insert = db
    .prepare(
      `INSERT INTO conversation_memory_versions (conversation_id, agent_id, path, version, content, content_hash, chars, deleted, created_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8
       WHERE COALESCE((SELECT version FROM conversation_memory_pages WHERE conversation_id = ?1 AND agent_id = ?2 AND path = ?3), 0) = ?4 - 1
       RETURNING version`,
    )
    .bind(conversationId, agentId, path, version, content, contentHash, content.length, now.toISOString());
  const rows = page.provenance.map((r) => ({ factKey: r.factKey, messageId: r.messageId, seq: r.seq, eventHash: r.eventHash, runId: r.runId }));
  const sources = db
    .prepare(
      `INSERT OR IGNORE INTO conversation_memory_provenance (conversation_id, agent_id, path, version, fact_key, message_id, seq, event_hash, run_id)
       SELECT ?1, ?2, ?3, ?4, json_extract(j.value, '$.factKey'), json_extract(j.value, '$.messageId'),
              json_extract(j.value, '$.seq'), json_extract(j.value, '$.eventHash'), json_extract(j.value, '$.runId')
       FROM json_each(?6) j
       WHERE EXISTS (
         SELECT 1 FROM conversation_memory_versions v
         WHERE v.conversation_id = ?1 AND v.agent_id = ?2 AND v.path = ?3 AND v.version = ?4 AND v.content_hash = ?5
       )`,
    )
    .bind(conversationId, agentId, path, version, contentHash, JSON.stringify(rows));
  const terms = pageTermStatements(db, PAGE_TERMS, { key: [conversationId, agentId], path }, { version, contentHash }, content, head);
  const [inserted] = await db.batch([insert, ...terms, sources]);
  return (inserted?.results.length ?? 0) === 1 ? "written" : "conflict";
}

/** Whether the extraction run was recorded complete: a redelivered job then has nothing to do. */
export async function extractionRecorded(db: D1Database, runId: string): Promise<boolean> {
  return (await db.prepare("SELECT 1 AS found FROM extraction_runs WHERE run_id = ?").bind(runId).first<{ found: number }>()) !== null;
}

/**
 * What the shard shows of the extraction a settled run owes (`core/wakeups` `extractionStep`), in one
 * read by three keys: the run's boundary (`boundaries.run_id`, unique), its completed extraction
 * (`extraction_runs`, by the extraction's run id), and a delivery of its job that failed (an
 * `extraction_failure` incident under that run id, `incidents_by_run`; the dead letter's
 * `retries_exhausted` is one too). `handoff_failed` rows, which an earlier version wrote when its one
 * send of the job failed, say the opposite: that no delivery was ever made.
 */
export async function readExtractionEvidence(db: D1Database, compactionRunId: string, extractionRunId: string): Promise<ExtractionEvidence> {
  const row = await db
    .prepare(
      `SELECT EXISTS (SELECT 1 FROM boundaries WHERE run_id = ?1) AS settled,
              EXISTS (SELECT 1 FROM extraction_runs WHERE run_id = ?2) AS completed,
              EXISTS (SELECT 1 FROM incidents WHERE run_id = ?2 AND kind = 'extraction_failure' AND code <> 'handoff_failed') AS attempted`,
    )
    .bind(compactionRunId, extractionRunId)
    .first<{ settled: number; completed: number; attempted: number }>();
  return { settled: row?.settled === 1, completed: row?.completed === 1, attempted: row?.attempted === 1 };
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
