import { isDirectChat, scopesAllow } from "./conversation-id";
import type { AgentDeclaration, MemorySharing } from "./declarations";
import { EXTRACTED_PREFIX } from "./fact-extraction";

/**
 * Where memory may travel: the one rule behind every path that serves or shows memory — context
 * and compose with a query, `memory/search`, the compactor's recall, the conversation's extracted
 * pages, the inspector. Each takes the reader (`MemoryReader`: the conversation being served, the
 * agent's current sources, the caller's scopes) and asks the checks below; storage only says which
 * rows exist.
 *
 * Two kinds of page, told apart by path (`pageAuthor`):
 * - a person's page (`PUT /v1/agents/{agent}/memory/{path}`, never under `extracted/`) is written
 *   for the agent by someone who may change it, and is served in every conversation the agent
 *   currently serves;
 * - an extracted fact is what someone said in one conversation. By default it is served only in
 *   that conversation. An agent whose declaration opts in (`memorySharing: "agent"`) is served it
 *   in its other conversations too, except a fact said in a direct chat (`isDirectChat`), which
 *   never leaves it. Either way only while the conversation it was said in is within the agent's
 *   current sources and within the caller's scopes: a token never receives a fact whose
 *   conversation it may not read. Extracted memory that names no conversation is served nowhere.
 *
 * The compactor's recall never shares (`compactionReader`): a boundary is served to every reader
 * of its conversation, so a fact from elsewhere summarized into it would reach readers that may
 * not read where it was said.
 *
 * Declaring an agent elsewhere (new sources) therefore retires every fact of the conversations it
 * no longer serves, without touching them: they stay stored, as history does.
 */

export type PageAuthor = "person" | "extraction";

/** Who wrote a page: extraction owns the `extracted/` namespace, people every other path. */
export function pageAuthor(path: string): PageAuthor {
  return path.startsWith(EXTRACTED_PREFIX) ? "extraction" : "person";
}

/** Who is served memory, where, and as whom. */
export interface MemoryReader {
  /** The conversation being served (or compacted). */
  readonly conversationId: string;
  /** The source patterns of the agent's current declaration. */
  readonly sources: readonly string[];
  /**
   * The caller's conversation scopes. Undefined when the service reads for the agent itself (its
   * compactor's recall, a reply): the agent's reach is its sources.
   */
  readonly scopes: readonly string[] | undefined;
  /** Whether facts of the agent's other conversations may be served here (the declaration's `memorySharing`). */
  readonly sharing: MemorySharing;
}

/** The reader `agent` is served as in `conversationId`, for a caller with `scopes` (undefined: the service itself, as the agent). */
export function agentReader(conversationId: string, agent: Pick<AgentDeclaration, "sources" | "context">, scopes: readonly string[] | undefined): MemoryReader {
  return { conversationId, sources: agent.sources, scopes, sharing: agent.context.memorySharing ?? "conversation" };
}

/** The reader a compaction of `conversationId` recalls as: the agent itself, its own conversation's facts only. */
export function compactionReader(conversationId: string, sources: readonly string[]): MemoryReader {
  return { conversationId, sources, scopes: undefined, sharing: "conversation" };
}

export type MemoryRefusal =
  /** The conversation is not (or no longer) within the agent's current sources. */
  | { readonly reason: "not_served"; readonly conversationId: string }
  /** The conversation is outside the caller's scopes. */
  | { readonly reason: "not_readable"; readonly conversationId: string }
  /** A fact said in another conversation than the one being served, to an agent that does not share. */
  | { readonly reason: "other_conversation"; readonly conversationId: string; readonly servedIn: string }
  /** A fact said in a direct chat, asked for in another conversation: never shared. */
  | { readonly reason: "direct_chat"; readonly conversationId: string; readonly servedIn: string }
  /** Extracted memory with no conversation of its own (an extracted page an older version kept agent-wide). */
  | { readonly reason: "unsourced" };

/** The conversation `conversationId` as the reader may reach it: within the agent's sources, and the caller's scopes. */
function reachRefusal(reader: MemoryReader, conversationId: string): MemoryRefusal | undefined {
  if (!scopesAllow(reader.sources, conversationId)) return { reason: "not_served", conversationId };
  if (reader.scopes !== undefined && !scopesAllow(reader.scopes, conversationId)) return { reason: "not_readable", conversationId };
  return undefined;
}

/** Whether any memory may be served in the reader's conversation at all (a person's pages included). */
export function servingRefusal(reader: MemoryReader): MemoryRefusal | undefined {
  return reachRefusal(reader, reader.conversationId);
}

/** Whether a fact said in `saidIn` may be served to the reader. */
export function factRefusal(reader: MemoryReader, saidIn: string): MemoryRefusal | undefined {
  const served = servingRefusal(reader);
  if (served !== undefined) return served;
  const reach = reachRefusal(reader, saidIn);
  if (reach !== undefined) return reach;
  if (saidIn === reader.conversationId) return undefined;
  if (reader.sharing !== "agent") return { reason: "other_conversation", conversationId: saidIn, servedIn: reader.conversationId };
  return isDirectChat(saidIn) ? { reason: "direct_chat", conversationId: saidIn, servedIn: reader.conversationId } : undefined;
}

/**
 * Whether a page may be served: one kept with a conversation (`conversationId`, extracted facts)
 * follows the facts' rule; an agent-wide page only if a person wrote it (extracted pages an older
 * version kept agent-wide name no conversation of their own, and are served nowhere).
 */
export function pageRefusal(reader: MemoryReader, page: { readonly path: string; readonly conversationId?: string | undefined }): MemoryRefusal | undefined {
  if (page.conversationId !== undefined) return factRefusal(reader, page.conversationId);
  return pageAuthor(page.path) === "person" ? servingRefusal(reader) : { reason: "unsourced" };
}
