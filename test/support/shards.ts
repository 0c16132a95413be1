import { env } from "cloudflare:workers";
import { shardDatabaseOf, placeConversation } from "../../src/storage/shards";

/**
 * Where a test reads and writes a conversation's own rows (events, activations, plans, boundaries,
 * incidents, the turn index): the shard its placement names, the way the service itself finds it.
 * Tokens, sessions, declarations, documents, memory pages and placements stay on `env.DB`.
 */

/** The shard database of `conversationId` (where it would be placed, for one nothing placed yet). */
export function shardOf(conversationId: string): Promise<D1Database> {
  return shardDatabaseOf(env, conversationId);
}

/** Places `conversationId` (if nothing has) and returns its shard: for rows a test writes by hand before any append. */
export async function placedShardOf(conversationId: string): Promise<D1Database> {
  return (await placeConversation(env, conversationId)).db;
}

/** The statement counting the sources of extracted memory an agent keeps with a conversation on `shard` (migrations/shard/0027). */
export function memorySourcesCount(shard: D1Database, conversationId: string, agentId: string): D1PreparedStatement {
  return shard
    .prepare(
      `SELECT COUNT(*) AS n FROM conversation_memory_sources
       WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?1) AND agent_key = (SELECT id FROM agent_keys WHERE agent_id = ?2)`,
    )
    .bind(conversationId, agentId);
}
