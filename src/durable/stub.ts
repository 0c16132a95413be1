import type { Result } from "../core/errors";
import type { ContextSelection } from "../core/context-manifest";
import type { AppendRequest, AppendResponse } from "./event-log";

/**
 * The conversation's Durable Object as the rest of the Worker sees it: these calls and the types
 * they carry. Nothing outside `src/durable/` imports the object's internals (a dependency-cruiser
 * rule), so the object and its engine can be rearranged behind this module.
 */

/** The Durable Object of one conversation (named by its id, so every Worker reaches the same one). */
export function conversationStub(env: Env, conversationId: string) {
  return env.CONVERSATION.get(env.CONVERSATION.idFromName(conversationId));
}

/** Appends through the conversation's object: the only write path into the event log. */
export async function appendToConversation(env: Env, request: AppendRequest): Promise<Result<AppendResponse>> {
  return conversationStub(env, request.conversationId).append(request);
}

/**
 * The agent's context, selected by the conversation's object (which holds the exact tail hot);
 * with `asOfSeq`, as it stood at that source message (a reply's); with `query`, with the memory
 * recalled for it that a caller holding `scopes` may be served (undefined: the service, for the agent itself).
 */
export async function contextFor(env: Env, conversationId: string, agentId: string, asOfSeq?: number, query?: string, scopes?: readonly string[]): Promise<Result<ContextSelection>> {
  return conversationStub(env, conversationId).context(conversationId, agentId, asOfSeq, query, scopes);
}
