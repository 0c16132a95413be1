import { chunksBySize } from "../../core/chunks";
import { pageTermsText } from "../../core/fact-merge";
import { sha256Hex } from "../../core/hash";
import type { ExtractionEvidence } from "../../core/wakeups";
import type { PageTermsStore } from "../page-terms";
import { pageTermStatements } from "../page-terms";
import { IN_LOG } from "./events";
import { agentKey, conversationKey } from "./keys";
import type { StoredText } from "./extracted-keys";
import { HEAD_VERSION, PAGE_KEYS, PAGE_TERMS_RULE, VERSION_TEXT, packedHex, pageOf, versionText } from "./extracted-keys";

/**
 * Every D1 statement of memory extraction, all on the conversation's shard
 * (migrations/shard/0016_conversation_memory.sql, 0035_memory_keyed.sql, 0036_memory_sources_keyed.sql, 0037_memory_packed.sql): the merged versions
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
  heads: "extracted_pages",
  versions: "extracted_versions",
  keyed: (alias) => pageOf(alias),
  storedHash: (hex) => `unhex(${hex})`,
  scope: `('k' || ${conversationKey("?1")} || ' a' || ${agentKey("?2")})`,
  rules: { column: "terms_rule", now: PAGE_TERMS_RULE, termsText: pageTermsText },
};

/** A page an extraction merged: its new content over `head` (undefined: no page yet), with the sources of the facts it sets. */
export interface MergedPage {
  readonly path: string;
  readonly head: PageHead | undefined;
  readonly content: string;
  readonly provenance: readonly ProvenanceRow[];
}

/**
 * The JSON of one write's pages passes as one bound parameter (D1 takes at most 2 MB a value): a
 * write of more is cut into writes of at most this much, each its own batch of the same five statements.
 */
const WRITE_BYTES = 1_000_000;

/**
 * Writes each page's content as the version after its `head`, with its provenance and its terms
 * (the head's leave the word index), where the page's head is still `head`; returns the paths
 * written (another writer moved the others' heads). Five statements a batch whatever the number
 * of pages (each page a row of one JSON parameter), so an extraction naming hundreds of pages
 * stays within a D1 invocation's queries.
 */
export async function writeMergedVersions(db: D1Database, conversationId: string, agentId: string, pages: readonly MergedPage[], now: Date): Promise<Set<string>> {
  const written = new Set<string>();
  for (const chunk of chunksBySize(pages, writeBytes, WRITE_BYTES)) {
    const moves = chunk.map((page) => ({ path: page.path, version: (page.head?.version ?? 0) + 1, contentHash: sha256Hex(page.content), content: page.content, previous: page.head }));
    const rows = JSON.stringify(
      moves.map((m, i) => ({ path: m.path, version: m.version, hash: m.contentHash, content: m.content, packed: packedHex(m.content), chars: m.content.length, provenance: chunk[i]?.provenance ?? [] })),
    );
    // The agent's key, which the versions are keyed by, exists before them (a no-op once it does).
    const agent = db.prepare("INSERT INTO agent_keys (agent_id) VALUES (?1) ON CONFLICT (agent_id) DO NOTHING").bind(agentId);
    const insert = db
      .prepare(
        `INSERT INTO extracted_versions (conversation_key, agent_key, path, version, content, content_hash, chars, deleted, created_ms, packed, packed_chars)
         SELECT ${PAGE_KEYS}, json_extract(j.value, '$.path'), json_extract(j.value, '$.version'),
                iif(k.packed, '', json_extract(j.value, '$.content')), unhex(json_extract(j.value, '$.hash')), iif(k.packed, 0, json_extract(j.value, '$.chars')), 0, ?4,
                iif(k.packed, unhex(json_extract(j.value, '$.packed')), NULL), iif(k.packed, json_extract(j.value, '$.chars'), NULL)
         FROM json_each(?3) j CROSS JOIN (SELECT COALESCE((SELECT packed FROM page_packing WHERE id = 1), 0) = 1 AS packed) k
         WHERE COALESCE((SELECT p.version FROM extracted_pages p WHERE ${pageOf("p")} AND p.path = json_extract(j.value, '$.path')), 0) = json_extract(j.value, '$.version') - 1
         RETURNING path`,
      )
      .bind(conversationId, agentId, rows, now.getTime());
    // Each source, bound to its page's exact version by that version's content hash, and to the
    // event it cites by the log's hash: a source citing any other hash has no sequence, which
    // fails the batch (migrations/shard/0036 keeps the hash in the log only).
    const sources = db
      .prepare(
        `INSERT INTO extracted_sources (page, fact_key, version, seq, message_id, run_id)
         SELECT p.id, json_extract(s.value, '$.factKey'), json_extract(j.value, '$.version'),
                CASE WHEN EXISTS (SELECT 1 FROM log l WHERE l.conversation_key = p.conversation_key AND l.seq = json_extract(s.value, '$.seq') AND l.hash = unhex(json_extract(s.value, '$.eventHash')))
                     THEN json_extract(s.value, '$.seq') END,
                json_extract(s.value, '$.messageId'), json_extract(s.value, '$.runId')
         FROM json_each(?3) j
         CROSS JOIN extracted_pages p ON ${pageOf("p")} AND p.path = json_extract(j.value, '$.path')
         CROSS JOIN json_each(j.value, '$.provenance') s
         WHERE EXISTS (
           SELECT 1 FROM extracted_versions v
           WHERE v.conversation_key = p.conversation_key AND v.agent_key = p.agent_key AND v.path = p.path AND v.version = json_extract(j.value, '$.version') AND v.content_hash = unhex(json_extract(j.value, '$.hash'))
         )
         ON CONFLICT DO NOTHING`,
      )
      .bind(conversationId, agentId, rows);
    const [, inserted] = await db.batch<{ path: string }>([agent, insert, ...pageTermStatements(db, PAGE_TERMS, [conversationId, agentId], moves), sources]);
    for (const row of inserted?.results ?? []) written.add(row.path);
  }
  return written;
}

/**
 * A bound on a page's share of a write's JSON: its content goes once, and its terms and the previous
 * head's by both rules (each at most tripled in UTF-8) four times more, with its provenance; and its
 * packed bytes in hex (DEFLATE adds a few bytes to what it cannot shrink).
 */
const writeBytes = (page: MergedPage): number =>
  3 * ((page.content.length + (page.head?.content?.length ?? 0)) * 5 + 200 * (1 + page.provenance.length)) + 2 * (3 * page.content.length + 64);

/** The newest version (live or tombstone) of each of these pages, by path; a page never written is absent. */
export async function readPageHeads(db: D1Database, conversationId: string, agentId: string, paths: readonly string[]): Promise<Map<string, PageHead>> {
  if (paths.length === 0) return new Map();
  const { results } = await db
    .prepare(
      `SELECT p.path AS path, v.version AS version, ${VERSION_TEXT}, lower(hex(v.content_hash)) AS content_hash, v.deleted AS deleted
       FROM json_each(?3) j
       CROSS JOIN extracted_pages p ON ${pageOf("p")} AND p.path = j.value ${HEAD_VERSION}`,
    )
    .bind(conversationId, agentId, JSON.stringify(paths))
    .all<StoredText & { path: string; version: number; deleted: number }>();
  return new Map(results.map((row) => [row.path, { version: row.version, content: row.deleted === 0 ? versionText(row) : undefined, contentHash: row.content_hash }]));
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
    .prepare(`SELECT seq, lower(hex(hash)) AS hash FROM log WHERE ${IN_LOG} AND seq IN (SELECT value FROM json_each(?2))`)
    .bind(conversationId, JSON.stringify(seqs))
    .all<{ seq: number; hash: string }>();
  return new Map(results.map((r) => [r.seq, r.hash]));
}
