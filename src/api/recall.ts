import { z } from "zod";
import { NOT_SERVING_MESSAGE } from "../core/agent-access";
import { scopesAllow } from "../core/conversation-id";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { agentIdSchema } from "../core/events";
import type { MemoryReader } from "../core/memory-privacy";
import { agentReader, factRefusal } from "../core/memory-privacy";
import { DEFAULT_MEMORY_BUDGET_CHARS, packMemory, recallQueryTextSchema } from "../core/recall";
import type { RecallCandidate, RecalledEntryHit } from "../core/recall-rank";
import { currentDeclaration } from "../storage/control/declarations";
import { readConversationFactSources } from "../storage/shard/conversation-memory";
import type { ApiPrincipal } from "../storage/control/tokens";
import type { ScopedConversationId } from "./access";
import { agentInScope, agentNotFound } from "./access";
import type { memorySearchSchema, recallResultSchema, Wire } from "./responses";
import { recallCandidates } from "../storage/served-memory";
import { validate } from "./validation";
import { shardDatabaseOf, shardsOf } from "../storage/shards";

/**
 * Recall search for one agent in one conversation: what the agent would be served from memory for
 * `q` if no tail were served — the conversation's exact turns it could be served and the memory it
 * may be served here (core/memory-privacy: the facts extracted from this conversation, as their
 * current statements, and pages people wrote for it, whole), in the memory envelope's order
 * (`recallCandidates`), nothing said twice, within the agent's memory budget (`packMemory`), at
 * most `limit`. Scoped like the conversation and like the agent: the token needs both, so it reads
 * neither another conversation's turns or facts nor another agent's pages.
 */

export const MAX_SEARCH_RESULTS = 50;

export const memorySearchQuery = z.object({
  agent: agentIdSchema,
  /** Free text: turned into quoted terms (`matchExpression`, core/search-text), never FTS syntax. */
  q: recallQueryTextSchema,
  limit: z.coerce.number().int().min(1).max(MAX_SEARCH_RESULTS).default(10),
});

type Source = { readonly messageId: string; readonly seq: number };

function resultView(hit: RecallCandidate, entrySources: ReadonlyMap<RecalledEntryHit, readonly Source[]>) {
  switch (hit.type) {
    case "turn":
      return { type: hit.type, snippet: hit.snippet, content: hit.content, sources: [{ messageId: hit.messageId, seq: hit.seq }] } satisfies Wire<typeof recallResultSchema>;
    case "entry":
      return {
        type: hit.type,
        path: hit.path,
        key: hit.key,
        ...(hit.elsewhere === undefined ? {} : { conversationId: hit.elsewhere }),
        snippet: hit.statement,
        content: hit.statement,
        sources: [...(entrySources.get(hit) ?? [])],
      } satisfies Wire<typeof recallResultSchema>;
    case "page":
      return { type: hit.type, path: hit.path, snippet: hit.snippet, content: hit.content, sources: [] } satisfies Wire<typeof recallResultSchema>;
  }
}

/**
 * The messages each chosen entry's current statement came from (its page version's provenance,
 * read once per page), as far as the reader may be served them.
 */
async function entrySources(shard: D1Database, reader: MemoryReader, agentId: string, hits: readonly RecallCandidate[]): Promise<Map<RecalledEntryHit, Source[]>> {
  const entries = hits.filter((hit): hit is RecalledEntryHit => hit.type === "entry");
  const sources = new Map<RecalledEntryHit, Source[]>();
  // Another conversation's entry is sourced by the line it was served from: its provenance rows are
  // on that conversation's shard, and the rule let the reader have that conversation's fact.
  for (const entry of entries) if (entry.elsewhere !== undefined) sources.set(entry, entry.seq === undefined ? [] : [{ messageId: entry.messageId, seq: entry.seq }]);
  const pages = Map.groupBy(
    entries.filter((entry) => entry.elsewhere === undefined),
    (entry) => `${entry.version}:${entry.path}`,
  );
  for (const group of pages.values()) {
    const [first] = group;
    if (first === undefined) continue;
    const rows = await readConversationFactSources(shard, reader.conversationId, agentId, first.path, first.version);
    const allowed = rows.filter((row) => factRefusal(reader, row.conversationId) === undefined);
    for (const entry of group) sources.set(entry, allowed.filter((row) => row.factKey === entry.key).map((row) => ({ messageId: row.messageId, seq: row.seq })));
  }
  return sources;
}

/** `{ agent, q, limit? }`: the items the agent would be served for `q`, at most `limit`. */
export async function searchMemory(env: Env, principal: ApiPrincipal, conversationId: ScopedConversationId, query: unknown): Promise<Result<Wire<typeof memorySearchSchema>>> {
  const parsed = validate(memorySearchQuery, query);
  if (!parsed.ok) return parsed;
  const { q, limit } = parsed.value;
  const db = env.DB;
  const agentId = await agentInScope(db, principal, parsed.value.agent);
  if (!agentId.ok) return agentId;
  const declaration = await currentDeclaration(db, agentId.value);
  // An id nobody declared answers as one declared outside the caller's scopes (`agentInScope`).
  if (declaration === undefined) return { ok: false, error: agentNotFound() };
  const { agent } = declaration.registration;
  if (!agent.enabled || !scopesAllow(agent.sources, conversationId)) return fail("not_found", NOT_SERVING_MESSAGE);
  const shard = await shardDatabaseOf(env, conversationId);
  const reader = agentReader(conversationId, agent, principal.scopes);
  const budget = agent.context.memoryBudgetChars ?? DEFAULT_MEMORY_BUDGET_CHARS;
  const view = { historyAgents: agent.historyAgents, admitSensitive: agent.admitSensitive };
  const candidates = await recallCandidates({ control: db, shard, shards: shardsOf(env).map((s) => s.db) }, { ...reader, agentId: agent.id }, view, q, budget);
  const hits = packMemory(candidates, budget).hits.slice(0, limit);
  const sources = await entrySources(shard, reader, agent.id, hits);
  return ok({ results: hits.map((hit) => resultView(hit, sources)) });
}
