import { scopesAllow, scopesContain } from "./conversation-id";

/**
 * Who may read or change an agent. An agent reads and writes every conversation its sources
 * admit (its context, its replies, its compactor's runs, the memory pages extracted from them), so
 * holding `agent:<id>` is not enough: the caller's conversation scopes must contain every source
 * pattern of the agent as it stands (`stored`) and, for a change, every pattern it would have
 * afterwards (`proposed`). A token that registered an agent and whose scopes no longer contain its
 * current sources (someone wider changed them) can neither read nor change it; the agent keeps
 * running as declared.
 */

/**
 * What a conversation route answers for an agent that does not serve the conversation, whether it
 * is declared elsewhere or not at all: one message, echoing no id, so a token for the conversation
 * learns nothing about which agent ids are held (404 `not_found`).
 */
export const NOT_SERVING_MESSAGE = "no agent of that id serves this conversation";

export type AgentRefusal =
  | { readonly reason: "agent_scope"; readonly agentId: string }
  /**
   * The stored declaration serves conversations outside the caller's scopes. Not even its existence
   * is the caller's to know: it is answered as an agent nobody declared (`api/access` `agentNotFound`).
   */
  | { readonly reason: "stored_sources"; readonly agentId: string }
  /** The caller's own proposed patterns that its scopes do not contain. */
  | { readonly reason: "proposed_sources"; readonly agentId: string; readonly outside: readonly string[] };

export function agentAccess(
  scopes: readonly string[],
  agentId: string,
  stored: readonly string[] | undefined,
  proposed?: readonly string[],
): AgentRefusal | undefined {
  if (!scopesAllow(scopes, `agent:${agentId}`)) return { reason: "agent_scope", agentId };
  if (stored !== undefined && !stored.every((pattern) => scopesContain(scopes, pattern))) return { reason: "stored_sources", agentId };
  const outside = (proposed ?? []).filter((pattern) => !scopesContain(scopes, pattern));
  if (outside.length > 0) return { reason: "proposed_sources", agentId, outside };
  return undefined;
}

/**
 * Whether the caller may act on a declaration it did not name but ran into: the holder of an id of
 * the pair it is registering. The same test as for the agent it named (`agentAccess`, nothing
 * proposed): one it could read anyway may be named as the holder (`id_in_use`); any other is not
 * the caller's to know of.
 */
export function mayActOn(scopes: readonly string[], holder: { readonly agentId: string; readonly sources: readonly string[] }): boolean {
  return agentAccess(scopes, holder.agentId, holder.sources) === undefined;
}
