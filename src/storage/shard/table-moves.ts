import type { Statement } from "./turn-terms";

/**
 * The rows a migration left in a table it replaced, moved to the new one a batch at a time by npm
 * run migrate (src/storage/search-backfill.ts's `runBackfill`): the sources of extracted memory
 * (migrations/shard/0027) and the turn index (0028). Each old table was renamed `…_v1`; its rows
 * are copied to the new table in rowid order, then deleted, in one transaction a batch, and the old
 * table's trigger lets a row go only once the new table holds it. Safe to run twice, or beside
 * another run: the copy ignores what the new table holds already (a turn an event moved first is
 * newer there), the delete what is gone.
 */
export interface TableMove {
  /**
   * Old rows per batch: a batch is one transaction of two statements, well inside D1's statement
   * time (SQLite moves 10,000 turns in about 25 ms here), and each batch is a round trip of
   * `wrangler d1 execute` from npm run migrate, so the fewer the better.
   */
  readonly perBatch: number;
  /** The oldest row the old table still holds (none: nothing left to move). */
  readonly oldest: Statement;
  /** The batch of old rows with rowids `fromId` … `fromId + size - 1` (`size`: `perBatch`): the copy, then the delete. */
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

export const SOURCES_MOVE = tableMove(
  "conversation_memory_provenance_v1",
  10_000,
  (range) => `INSERT OR IGNORE INTO conversation_memory_sources (conversation_key, agent_key, path, fact_key, version, seq, message_id, event_hash, run_id)
    SELECT k.id, a.id, o.path, o.fact_key, o.version, o.seq, o.message_id, o.event_hash, o.run_id
    FROM conversation_memory_provenance_v1 o
    JOIN conversation_keys k ON k.conversation_id = o.conversation_id
    JOIN agent_keys a ON a.agent_id = o.agent_id
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
