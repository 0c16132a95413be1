import { agentKey, conversationKey } from "./keys";

/**
 * How statements reach the sources of extracted memory (migrations/shard/0027):
 * `conversation_memory_sources` keeps one entry per source, keyed by the conversation's and the
 * agent's integer keys. The move of the rows stored before it is storage/shard/table-moves'.
 */

/** The conversation's and the agent's keys, for statements that bind the conversation id as ?1 and the agent id as ?2. */
export const SOURCE_KEYS = `${conversationKey("?1")}, ${agentKey("?2")}`;

/** The same keys as conditions on a source row `alias`. */
export const sourceOf = (alias: string): string => `${alias}.conversation_key = ${conversationKey("?1")} AND ${alias}.agent_key = ${agentKey("?2")}`;
