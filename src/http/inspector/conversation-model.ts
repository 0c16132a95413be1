import type { ScopedConversationId } from "../../api/access";
import type { ChainAudit, ChainListing } from "../../api/chain";
import { listChain, verifyChain } from "../../api/chain";
import { selectContext } from "../../api/conversations";
import { scopesAllow } from "../../core/conversation-id";
import type { Result } from "../../core/errors";
import type { StoredEvent } from "../../core/events";
import type { ContextSelection } from "../../core/context-manifest";
import { servingDeclarations } from "../../storage/compaction-store";
import { countRunsByStatus, listEventsBefore, listRunEventsBefore } from "../../storage/event-store";
import type { ConversationFactRow } from "../../storage/conversation-memory-store";
import { readConversationFacts } from "../../storage/conversation-memory-store";
import { agentReader, factRefusal } from "../../core/memory-privacy";
import { parsePage } from "../../core/fact-merge";
import { conversationDb } from "../../storage/shards";
import type { SizeSample } from "../../core/chart-geometry";
import { readPreflightSizes } from "../../storage/context-size-store";

/**
 * Everything the conversation page shows, gathered through the same operations the API serves
 * (`selectContext`, `listChain`, `verifyChain`) so the page can never disagree with what an agent
 * or an auditor is told. Each section keeps its own Result: one failing (a chain that fails closed)
 * is shown as that failure while the others still render.
 */

export const TIMELINE_PAGE = 100;
export const RUNS_PAGE = 200;
/** The newest preflights drawn in the context-size chart: enough for several compactions at any trigger. */
export const SIZE_SAMPLES = 200;

export type RunEvent = Extract<StoredEvent, { kind: "run" }>;

export interface Page<T> {
  readonly items: readonly T[];
  /** The `before` cursor of the next (older) page, or null on the last one. */
  readonly nextBefore: number | null;
}

export interface ConversationModel {
  readonly conversationId: string;
  /** Agents whose current declaration serves this conversation, by id. */
  readonly servingAgents: readonly string[];
  readonly agentId: string | undefined;
  /** The compactor policy of the agent's current declaration: where the bar draws its lines. */
  readonly policy: { readonly triggerInputChars: number; readonly retainInputChars: number } | undefined;
  readonly context: Result<ContextSelection> | undefined;
  readonly listing: Result<ChainListing> | undefined;
  readonly audit: Result<ChainAudit> | undefined;
  readonly runs: Page<RunEvent> & { readonly counts: ReadonlyMap<string, number> };
  readonly timeline: Page<StoredEvent>;
  readonly memory: readonly ExtractedFactView[];
  /** The agent's compactor's preflight sizes, oldest first (none without a declaration). */
  readonly sizes: readonly SizeSample[];
}

/** One extracted fact as the inspector shows it: its current statement and the messages of this conversation it came from. */
export interface ExtractedFactView {
  readonly path: string;
  readonly key: string;
  readonly pageVersion: number;
  readonly statement: string;
  readonly sources: readonly { readonly messageId: string; readonly seq: number; readonly eventHash: string; readonly runId: string }[];
}

export const MEMORY_SOURCES_SHOWN = 200;

function factViews(rows: readonly ConversationFactRow[]): ExtractedFactView[] {
  const views = new Map<string, ExtractedFactView & { sources: ExtractedFactView["sources"][number][] }>();
  for (const row of rows) {
    const id = `${row.path} ${row.factKey}`;
    let view = views.get(id);
    if (view === undefined) {
      // Only the current statement: what it superseded stays in the page's history.
      const statement = parsePage(row.pageContent).get(row.factKey)?.current.statement ?? "";
      view = { path: row.path, key: row.factKey, pageVersion: row.pageVersion, statement, sources: [] };
      views.set(id, view);
    }
    view.sources.push({ messageId: row.messageId, seq: row.seq, eventHash: row.eventHash, runId: row.runId });
  }
  return [...views.values()];
}

export interface ConversationQuery {
  readonly agent?: string | undefined;
  readonly before?: number | undefined;
  readonly runsBefore?: number | undefined;
}

/** Reads one more row than a page holds to tell whether an older page exists. */
function paged<T extends { readonly seq: number }>(rows: readonly T[], size: number): Page<T> {
  const items = rows.slice(0, size);
  const last = items.at(-1);
  return { items, nextBefore: rows.length > size && last !== undefined ? last.seq : null };
}

/** The conversation page for a session whose token holds `scopes` (the extracted facts shown are those core/memory-privacy lets it read). */
export async function loadConversation(env: Env, conversationId: ScopedConversationId, query: ConversationQuery, scopes: readonly string[]): Promise<ConversationModel> {
  const [declarations, shard] = await Promise.all([servingDeclarations(env.DB, conversationId), conversationDb(env, conversationId)]);
  const servingAgents = declarations
    .filter((d) => scopesAllow(d.registration.agent.sources, conversationId))
    .map((d) => d.agentId)
    .sort();
  const agentId = query.agent ?? servingAgents[0];
  const declaration = declarations.find((d) => d.agentId === agentId);
  const policy = declaration?.registration.compactor.policy;
  const reader = declaration === undefined ? undefined : agentReader(conversationId, declaration.registration.agent, scopes);
  const agentQuery = { agent: agentId };
  const [context, listing, audit, timeline, runs, counts, facts, sizes] = await Promise.all([
    agentId === undefined ? undefined : selectContext(env, conversationId, agentQuery, scopes),
    agentId === undefined ? undefined : listChain(env, conversationId, agentQuery),
    agentId === undefined ? undefined : verifyChain(env, conversationId, agentQuery),
    listEventsBefore(shard, conversationId, query.before ?? Number.MAX_SAFE_INTEGER, TIMELINE_PAGE + 1),
    listRunEventsBefore(shard, conversationId, query.runsBefore ?? Number.MAX_SAFE_INTEGER, RUNS_PAGE + 1),
    countRunsByStatus(shard, conversationId),
    agentId === undefined || reader === undefined ? [] : readConversationFacts(shard, conversationId, agentId, MEMORY_SOURCES_SHOWN),
    declaration === undefined ? [] : readPreflightSizes(shard, conversationId, declaration.registration.compactor.id, SIZE_SAMPLES),
  ]);
  return {
    conversationId,
    servingAgents,
    agentId,
    policy: policy === undefined ? undefined : { triggerInputChars: policy.triggerInputChars, retainInputChars: policy.retainInputChars },
    context,
    listing,
    audit,
    runs: { ...paged(runs.filter((e): e is RunEvent => e.kind === "run"), RUNS_PAGE), counts },
    timeline: paged(timeline, TIMELINE_PAGE),
    memory: factViews(reader === undefined ? [] : facts.filter((row) => factRefusal(reader, row.conversationId) === undefined)),
    sizes,
  };
}
