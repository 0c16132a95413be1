import type { Statement } from "./turn-terms";

/**
 * The rows a migration left in a table it replaced, moved to the new one a batch at a time by npm
 * run migrate (src/storage/search-backfill.ts's `runBackfill`): the sources of extracted memory
 * (migrations/shard/0027), the turn index (0028), and extracted memory's heads and versions (0035). Each old table was renamed `…_v1`; its rows
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
