import type { Statement } from "./turn-terms";

/**
 * The rows a migration left in a table it replaced, moved to the new one a batch at a time by npm
 * run migrate (src/storage/search-backfill.ts's `runBackfill`): the sources of extracted memory
 * (migrations/shard/0027), the turn index (0028), extracted memory's heads and versions (0035) and its sources (0036). Each old table was renamed `…_v1`; its rows
 * are copied to the new table in rowid order, then deleted, in one transaction a batch, and the old
 * table's trigger lets a row go only once the new table holds it. Safe to run twice, or beside
 * another run: the copy ignores what the new table holds already (a turn an event moved first is
 * newer there), the delete what is gone. The log's move (0031) takes the same steps apart: its copy
 * (`LOG_COPY`) before the upload, its release (`LOG_RELEASE`) after it.
 */
export interface TableMove {
  /**
   * Old rows per batch: a batch is one transaction of two statements, well inside D1's statement
   * time (SQLite moves 10,000 turns in about 25 ms here), and each batch is a round trip of
   * `wrangler d1 execute` from npm run migrate, so the fewer the better.
   */
  readonly perBatch: number;
  /** The oldest row the old table still holds that is left to move (none: nothing). */
  readonly oldest: Statement;
  /** The batch of old rows with rowids `fromId` … `fromId + size - 1` (`size`: `perBatch`): the copy, then the delete (for the log, one or the other). */
  batch(fromId: number, size?: number): Statement[];
}

function tableMove(old: string, perBatch: number, copy: (range: string) => string): TableMove {
  return {
    perBatch,
    oldest: { sql: `SELECT rowid AS id FROM ${old} ORDER BY rowid LIMIT 1`, params: [] },
    batch: (fromId, size = perBatch) => {
      const range = [fromId, fromId + size - 1];
      return [
        { sql: copy("o.rowid BETWEEN ?1 AND ?2"), params: range },
        { sql: `DELETE FROM ${old} WHERE rowid BETWEEN ?1 AND ?2`, params: range },
      ];
    },
  };
}

/** An old table `old` (as `o`) whose rows name the conversation and the agent by their text ids, joined to their integer keys (`k`, `a`). */
const keyedFrom = (old: string): string => `${old} o
    JOIN conversation_keys k ON k.conversation_id = o.conversation_id
    JOIN agent_keys a ON a.agent_id = o.agent_id`;

export const SOURCES_MOVE = tableMove(
  "conversation_memory_provenance_v1",
  10_000,
  (range) => `INSERT OR IGNORE INTO conversation_memory_sources (conversation_key, agent_key, path, fact_key, version, seq, message_id, event_hash, run_id)
    SELECT k.id, a.id, o.path, o.fact_key, o.version, o.seq, o.message_id, o.event_hash, o.run_id
    FROM ${keyedFrom("conversation_memory_provenance_v1")}
    WHERE ${range}`,
);

export const TURNS_MOVE = tableMove(
  "turn_index_v1",
  10_000,
  (range) => `INSERT OR IGNORE INTO turns (conversation_key, role, message_id, seq, author_id, author_name, author_terms, origin_sensitive, edit_seq, edit_ms, edit_sensitive, deleted, delivered)
    SELECT k.id, o.role, o.message_id, o.seq, o.author_id, o.author_name, o.author_terms, o.origin_sensitive, o.edit_seq, o.edit_ms, o.edit_sensitive, o.deleted, o.delivered
    FROM turn_index_v1 o
    JOIN conversation_keys k ON k.conversation_id = o.conversation_id
    WHERE ${range}`,
);

/**
 * Extracted memory's heads and versions stored before migrations/shard/0035, moved to the tables
 * keyed by integers: the heads first, each with its id (the rowid of its terms), then the versions
 * (an old head names an old version, so the versions can leave only once no old head is left). A
 * batch of versions is smaller: each carries a page's whole content.
 */
export const EXTRACTED_PAGES_MOVE = tableMove(
  "conversation_memory_pages_v1",
  10_000,
  (range) => `INSERT OR IGNORE INTO extracted_pages (id, conversation_key, agent_key, path, version, terms_version)
    SELECT o.id, k.id, a.id, o.path, o.version, o.terms_version
    FROM ${keyedFrom("conversation_memory_pages_v1")}
    WHERE ${range}`,
);

export const EXTRACTED_VERSIONS_MOVE = tableMove(
  "conversation_memory_versions_v1",
  1_000,
  (range) => `INSERT OR IGNORE INTO extracted_versions (conversation_key, agent_key, path, version, content, content_hash, chars, deleted, created_ms)
    SELECT k.id, a.id, o.path, o.version, o.content, unhex(o.content_hash), o.chars, o.deleted, CAST(round((julianday(o.created_at) - 2440587.5) * 86400000.0) AS INTEGER)
    FROM ${keyedFrom("conversation_memory_versions_v1")}
    WHERE ${range}`,
);

/**
 * Extracted memory's sources stored before migrations/shard/0036, moved to `extracted_sources` by
 * their page's id (the heads move first), each only if the log holds the event it cites with the
 * hash it cites (else the copy fails its batch and the move stops there, the row kept). The old
 * table is keyed, not numbered: each batch takes its first rows in key order, copies them, then
 * deletes the same rows.
 */
const SOURCES_V1_PER_BATCH = 10_000;
const SOURCES_V1_FIRST = `SELECT conversation_key, agent_key, path, fact_key, version, seq FROM conversation_memory_sources_v1
    ORDER BY conversation_key, agent_key, path, fact_key, version, seq LIMIT ?1`;

export const EXTRACTED_SOURCES_MOVE: TableMove = {
  perBatch: SOURCES_V1_PER_BATCH,
  oldest: { sql: "SELECT 1 AS id FROM conversation_memory_sources_v1 LIMIT 1", params: [] },
  batch: (_fromId, size = SOURCES_V1_PER_BATCH) => [
    {
      sql: `INSERT INTO extracted_sources (page, fact_key, version, seq, message_id, run_id)
        SELECT p.id, o.fact_key, o.version,
          CASE WHEN EXISTS (SELECT 1 FROM log l WHERE l.conversation_key = o.conversation_key AND l.seq = o.seq AND lower(hex(l.hash)) = o.event_hash) THEN o.seq END,
          o.message_id, o.run_id
        FROM conversation_memory_sources_v1 o
        JOIN extracted_pages p ON p.conversation_key = o.conversation_key AND p.agent_key = o.agent_key AND p.path = o.path
        WHERE (o.conversation_key, o.agent_key, o.path, o.fact_key, o.version, o.seq) IN (${SOURCES_V1_FIRST})
        ON CONFLICT DO NOTHING`,
      params: [size],
    },
    { sql: `DELETE FROM conversation_memory_sources_v1 WHERE (conversation_key, agent_key, path, fact_key, version, seq) IN (${SOURCES_V1_FIRST})`, params: [size] },
  ],
};

const LOG_ROWS_PER_BATCH = 10_000;

/**
 * The log's rows stored before migrations/shard/0031, copied from `events` to `log` a batch at a
 * time in rowid order, each batch recording how far it got (`log_copy`): npm run migrate runs it
 * before the new Worker is uploaded, and a Worker not yet redeployed keeps reading `events` whole
 * meanwhile. The copied rows leave `events` only once the new Worker is live (`LOG_RELEASE`), each
 * only once `log` holds it exactly (the old table's delete trigger). A row already in `log` (a
 * Worker not yet redeployed forwarded it) is not copied twice. A move whose `oldest` is the first
 * row not yet copied: the rows stay in `events`.
 */
export const LOG_COPY: TableMove = {
  perBatch: LOG_ROWS_PER_BATCH,
  oldest: { sql: "SELECT rowid AS id FROM events WHERE rowid > (SELECT through_rowid FROM log_copy WHERE id = 1) ORDER BY rowid LIMIT 1", params: [] },
  batch: (fromId, size = LOG_ROWS_PER_BATCH) => {
    const range = [fromId, fromId + size - 1];
    return [
      {
        sql: `INSERT OR IGNORE INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at)
          SELECT k.id, o.seq, o.kind, o.idempotency_key, o.sensitive, o.body, unhex(o.hash), CAST(round((julianday(o.recorded_at) - 2440587.5) * 86400000.0) AS INTEGER)
          FROM events o JOIN conversation_keys k ON k.conversation_id = o.conversation_id
          WHERE o.rowid BETWEEN ?1 AND ?2`,
        params: range,
      },
      { sql: "UPDATE log_copy SET through_rowid = ?2 WHERE id = 1 AND through_rowid < ?2", params: range },
    ];
  },
};

/**
 * Once the new Worker is live: the rows the copy took leave `events`, a batch at a time (the old
 * table's trigger refuses a row `log` does not hold exactly, which stops the release there).
 */
export const LOG_RELEASE: TableMove = {
  perBatch: LOG_ROWS_PER_BATCH,
  oldest: { sql: "SELECT rowid AS id FROM events WHERE rowid <= (SELECT through_rowid FROM log_copy WHERE id = 1) ORDER BY rowid LIMIT 1", params: [] },
  batch: (fromId, size = LOG_ROWS_PER_BATCH) => [
    { sql: "DELETE FROM events WHERE rowid BETWEEN ?1 AND ?2 AND rowid <= (SELECT through_rowid FROM log_copy WHERE id = 1)", params: [fromId, fromId + size - 1] },
  ],
};
