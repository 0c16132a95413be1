import type { ScopedConversationId } from "../../api/access";
import type { ChainAudit, ChainListing } from "../../api/chain";
import { listChain, verifyChain } from "../../api/chain";
import { selectContext } from "../../api/conversations";
import { scopesAllow } from "../../core/conversation-id";
import type { Result } from "../../core/errors";
import type { StoredEvent } from "../../core/events";
import type { ContextSelection } from "../../core/context-manifest";
import { servingDeclarations } from "../../storage/control/declarations";
import { countRunsByStatus, listEventsBefore, listRunEventsBefore } from "../../storage/shard/events";
import type { ConversationFactRow, FactCursor } from "../../storage/shard/conversation-memory";
import { readConversationFacts } from "../../storage/shard/conversation-memory";
import { agentReader, factRefusal } from "../../core/memory-privacy";
import { parsePage } from "../../core/fact-merge";
import { shardDatabaseOf } from "../../storage/shards";
import type { SizeSample } from "../../core/chart-geometry";
import { readPreflightSizes } from "../../storage/shard/context-sizes";
import type { PlanSpan } from "../../storage/shard/run-spans";
import { readPlanSpans } from "../../storage/shard/run-spans";

/**
 * Everything the conversation page shows, gathered through the same operations the API serves
 * (`selectContext`, `listChain`, `verifyChain`) so the page can never disagree with what an agent
 * or an auditor is told. Each section keeps its own Result: one failing (a chain that fails closed)
 * is shown as that failure while the others still render.
 */

/** Rows per page of each long section: the demo's conversation holds 83 events and 30 facts. */
export const TIMELINE_PAGE = 20;
export const RUNS_PAGE = 20;
export const MEMORY_PAGE = 20;
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
  /** `spans`: the plans behind the page's compactor runs, by run id (where durations come from). */
  /** `counts` are of the runs after `countedAfterSeq` (0: the whole log; else the newest `INSPECTED_EVENTS` events). */
  readonly runs: Page<RunEvent> & { readonly counts: ReadonlyMap<string, number>; readonly countedAfterSeq: number; readonly spans: ReadonlyMap<string, PlanSpan> };
  readonly timeline: Page<StoredEvent>;
  /** `next`: the last fact shown when more follow it (the next page's `after`), else null. */
  readonly memory: { readonly items: readonly ExtractedFactView[]; readonly next: FactCursor | null };
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

/** Sources listed per fact: a page of facts stays bounded however often one fact was restated. */
export const MEMORY_SOURCES_SHOWN = 10;

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
  /** Memory: facts after this one (omitted: from the first). */
  readonly memory?: FactCursor | undefined;
}

/** Reads one more row than a page holds to tell whether an older page exists. */
function paged<T extends { readonly seq: number }>(rows: readonly T[], size: number): Page<T> {
  const items = rows.slice(0, size);
  const last = items.at(-1);
  return { items, nextBefore: rows.length > size && last !== undefined ? last.seq : null };
}

/** As `paged`, for facts: read one fact more than a page holds. */
function pagedFacts(views: readonly ExtractedFactView[], size: number): ConversationModel["memory"] {
  const items = views.slice(0, size);
  const last = items.at(-1);
  return { items, next: views.length > size && last !== undefined ? { path: last.path, factKey: last.key } : null };
}

/** The conversation page for a session whose token holds `scopes` (the extracted facts shown are those core/memory-privacy lets it read). */
export async function loadConversation(env: Env, conversationId: ScopedConversationId, query: ConversationQuery, scopes: readonly string[]): Promise<ConversationModel> {
  const [declarations, shard] = await Promise.all([servingDeclarations(env.DB, conversationId), shardDatabaseOf(env, conversationId)]);
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
    agentId === undefined || reader === undefined ? [] : readConversationFacts(shard, conversationId, agentId, query.memory, MEMORY_PAGE + 1, MEMORY_SOURCES_SHOWN),
    declaration === undefined ? [] : readPreflightSizes(shard, conversationId, declaration.registration.compactor.id, SIZE_SAMPLES),
  ]);
  const runPage = paged(runs.filter((e): e is RunEvent => e.kind === "run"), RUNS_PAGE);
  const spans = await readPlanSpans(shard, conversationId, runPage.items.filter((run) => run.body.role === "compactor").map((run) => run.body.runId));
  return {
    conversationId,
    servingAgents,
    agentId,
    policy: policy === undefined ? undefined : { triggerInputChars: policy.triggerInputChars, retainInputChars: policy.retainInputChars },
    context,
    listing,
    audit,
    runs: { ...runPage, counts: counts.byStatus, countedAfterSeq: counts.afterSeq, spans },
    timeline: paged(timeline, TIMELINE_PAGE),
    memory: pagedFacts(factViews(reader === undefined ? [] : facts.filter((row) => factRefusal(reader, row.conversationId) === undefined)), MEMORY_PAGE),
    sizes,
  };
}
