import { agentKey, conversationKey } from "./keys";

/**
 * How statements reach a conversation's extracted memory on its shard: the heads and versions
 * (`extracted_pages`, `extracted_versions`, migrations/shard/0035) are keyed by the conversation's
 * and the agent's integer keys, and each source of a fact (`extracted_sources`, 0036) by its
 * page's id. The moves of the rows stored before them are storage/shard/table-moves'.
 */

/** The conversation's and the agent's keys, for statements that bind the conversation id as ?1 and the agent id as ?2. */
export const PAGE_KEYS = `${conversationKey("?1")}, ${agentKey("?2")}`;

/** A head or version row `alias` of the conversation bound as `conversation` and the agent bound as `agent` (their integer keys). */
export const pageOf = (alias: string, conversation = "?1", agent = "?2"): string =>
  `${alias}.conversation_key = ${conversationKey(conversation)} AND ${alias}.agent_key = ${agentKey(agent)}`;

/** A page's head `p` joined to its newest version row `v` (live or tombstone). */
export const HEAD_VERSION = "JOIN extracted_versions v ON v.conversation_key = p.conversation_key AND v.agent_key = p.agent_key AND v.path = p.path AND v.version = p.version";

/** The event a source row `m` cites, as `l`: by the conversation key `conversation` (an SQL expression) and the source's sequence. */
export const cited = (conversation: string): string => `JOIN log l ON l.conversation_key = ${conversation} AND l.seq = m.seq`;
