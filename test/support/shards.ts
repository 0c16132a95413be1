import { env } from "cloudflare:workers";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { insertEvents } from "../../src/storage/shard/log-writer";
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

/** The statement counting the sources of extracted memory an agent keeps with a conversation on `shard` (keyed by their page, migrations/shard/0036). */
export function memorySourcesCount(shard: D1Database, conversationId: string, agentId: string): D1PreparedStatement {
  return shard
    .prepare(
      `SELECT COUNT(*) AS n FROM extracted_sources s JOIN extracted_pages p ON p.id = s.page
       WHERE p.conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?1) AND p.agent_key = (SELECT id FROM agent_keys WHERE agent_id = ?2)`,
    )
    .bind(conversationId, agentId);
}

/**
 * Appends messages `messageIds` to `conversationId`'s log on `shard` through the log's own writer,
 * as the events a fixture's facts cite (a source of extracted memory must cite an event the log
 * holds, with its hash: migrations/shard/0036); returns each one's sequence and hash, in order.
 */
export async function loggedMessages(shard: D1Database, conversationId: string, messageIds: readonly string[]): Promise<{ seq: number; hash: string }[]> {
  const last = (await shard.prepare("SELECT last_seq FROM conversations WHERE id = ?").bind(conversationId).first<{ last_seq: number }>())?.last_seq ?? 0;
  const planned = messageIds.map((messageId, i) => {
    const input = eventInputSchema.parse({ kind: "source", idempotencyKey: `cited-${messageId}`, body: { messageId, author: { id: "u1", name: "Ada" }, text: `message ${messageId}` } });
    return { input, hash: eventHash(conversationId, input), seq: last + 1 + i };
  });
  const { applied } = await insertEvents(shard, conversationId, planned, new Date().toISOString());
  if (!applied.every(Boolean)) throw new Error(`the log of ${conversationId} did not take the cited messages`);
  return planned.map(({ seq, hash }) => ({ seq, hash }));
}
