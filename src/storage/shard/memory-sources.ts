import type { Statement } from "./turn-terms";

/**
 * Where the sources of extracted memory are kept (migrations/shard/0027): `conversation_memory_sources`,
 * one entry per source keyed by the conversation's and the agent's integer keys, and the move of
 * the rows stored before it (`conversation_memory_provenance_v1`), a batch at a time (npm run
 * migrate, through src/storage/search-backfill.ts's `runBackfill`).
 */

/** The conversation's and the agent's keys, for statements that bind the conversation id as ?1 and the agent id as ?2. */
export const SOURCE_KEYS = "(SELECT id FROM conversation_keys WHERE conversation_id = ?1), (SELECT id FROM agent_keys WHERE agent_id = ?2)";

/** The same keys as conditions on a source row `alias`. */
export const sourceOf = (alias: string): string =>
  `${alias}.conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?1) AND ${alias}.agent_key = (SELECT id FROM agent_keys WHERE agent_id = ?2)`;

/** Old rows moved per batch. */
export const SOURCES_PER_BATCH = 2_000;

/** The oldest row the old table still holds (none: nothing left to move). */
export const OLDEST_UNMOVED: Statement = { sql: "SELECT rowid AS id FROM conversation_memory_provenance_v1 ORDER BY rowid LIMIT 1", params: [] };

/**
 * One batch of the move: the old rows with rowids `fromId` … `fromId + SOURCES_PER_BATCH - 1` are
 * copied, then deleted (the old table's trigger lets a row go only once the copy is exact). Safe to
 * run twice, or beside another run: the copy ignores what is there, the delete what is gone.
 */
export function moveSources(fromId: number): Statement[] {
  const range = [fromId, fromId + SOURCES_PER_BATCH - 1];
  return [
    {
      sql: `INSERT OR IGNORE INTO conversation_memory_sources (conversation_key, agent_key, path, fact_key, version, seq, message_id, event_hash, run_id)
            SELECT k.id, a.id, o.path, o.fact_key, o.version, o.seq, o.message_id, o.event_hash, o.run_id
            FROM conversation_memory_provenance_v1 o
            JOIN conversation_keys k ON k.conversation_id = o.conversation_id
            JOIN agent_keys a ON a.agent_id = o.agent_id
            WHERE o.rowid BETWEEN ?1 AND ?2`,
      params: range,
    },
    { sql: "DELETE FROM conversation_memory_provenance_v1 WHERE rowid BETWEEN ?1 AND ?2", params: range },
  ];
}
