import { z } from "zod";
import { scopesAllow } from "../core/conversation-id";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { agentIdSchema } from "../core/events";
import { recallQueryTextSchema } from "../core/recall";
import type { RecallHit } from "../core/recall-rank";
import { mergeHits } from "../core/recall-rank";
import { currentDeclaration } from "../storage/compaction-store";
import { recallMatchExpression } from "../storage/memory-store";
import { readFactSources } from "../storage/extraction-store";
import { searchPages, searchTurns } from "../storage/recall-store";
import type { ApiPrincipal } from "../storage/token-store";
import type { ScopedConversationId } from "./access";
import { agentInScope } from "./access";
import type { memorySearchSchema, recallResultSchema, Wire } from "./responses";
import { validate } from "./validation";
import { conversationDb } from "../storage/shards";

/**
 * Recall search for one agent in one conversation: its memory pages and the conversation's exact
 * turns that it could be served, each bm25-ranked, in one list fused by rank (`mergeHits`). Scoped like the conversation and like
 * the agent: the token needs both, so it reads neither another conversation's turns nor another
 * agent's pages.
 */

export const MAX_SEARCH_RESULTS = 50;

export const memorySearchQuery = z.object({
  agent: agentIdSchema,
  /** Free text: turned into quoted terms (`recallMatchExpression`), never FTS syntax. */
  q: recallQueryTextSchema,
  limit: z.coerce.number().int().min(1).max(MAX_SEARCH_RESULTS).default(10),
});

type Source = { readonly messageId: string; readonly seq: number };

function resultView(hit: RecallHit, pageSources: readonly Source[]) {
  return (
    hit.type === "page"
      ? { type: hit.type, path: hit.path, snippet: hit.snippet, content: hit.content, sources: [...pageSources] }
      : { type: hit.type, snippet: hit.snippet, content: hit.content, sources: [{ messageId: hit.messageId, seq: hit.seq }] }
  ) satisfies Wire<typeof recallResultSchema>;
}

/**
 * The messages of this conversation that a page's current facts were extracted from. A page of
 * the agent may hold facts from several conversations: only this one's sources are named, so a
 * search never reveals another conversation's message ids.
 */
async function pageSources(db: D1Database, agentId: string, conversationId: string, hit: RecallHit): Promise<Source[]> {
  if (hit.type !== "page") return [];
  const rows = await readFactSources(db, agentId, hit.path, hit.version);
  return rows.filter((r) => r.conversationId === conversationId).map((r) => ({ messageId: r.messageId, seq: r.seq }));
}

/** `{ agent, q, limit? }`: the best pages and turns, at most `limit`. */
export async function searchMemory(env: Env, principal: ApiPrincipal, conversationId: ScopedConversationId, query: unknown): Promise<Result<Wire<typeof memorySearchSchema>>> {
  const parsed = validate(memorySearchQuery, query);
  if (!parsed.ok) return parsed;
  const { q, limit } = parsed.value;
  const db = env.DB;
  const agentId = await agentInScope(db, principal, parsed.value.agent);
  if (!agentId.ok) return agentId;
  const declaration = await currentDeclaration(db, agentId.value);
  const agent = declaration?.registration.agent;
  if (agent === undefined || !agent.enabled || !scopesAllow(agent.sources, conversationId)) {
    return fail("not_found", `agent ${agentId.value} has no enabled declaration serving this conversation`);
  }
  const match = recallMatchExpression(q);
  if (match === undefined) return ok({ results: [] });
  const [pages, turns] = await Promise.all([
    searchPages(db, agent.id, match, limit),
    searchTurns(await conversationDb(env, conversationId), conversationId, match, { historyAgents: agent.historyAgents, admitSensitive: agent.admitSensitive }, limit),
  ]);
  const hits = mergeHits(pages, turns, limit);
  const sources = await Promise.all(hits.map((hit) => pageSources(db, agent.id, conversationId, hit)));
  return ok({ results: hits.map((hit, i) => resultView(hit, sources[i] ?? [])) });
}
