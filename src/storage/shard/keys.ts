/**
 * The small integers a shard keys a conversation and an agent by (`conversation_keys`, migrations/shard/0015;
 * `agent_keys`, 0018), as SQL over the id bound as `param` (`?1`, `?2`…): the tables keyed by them
 * (`turns`, `conversation_memory_sources`, the rowids of `turn_terms`) are reached through these.
 */
export const conversationKey = (param: string): string => `(SELECT id FROM conversation_keys WHERE conversation_id = ${param})`;
export const agentKey = (param: string): string => `(SELECT id FROM agent_keys WHERE agent_id = ${param})`;
