import type { Group } from "../core/compaction-plan";
import type { AgentDeclaration } from "../core/declarations";
import type { MemoryManifest, MemoryPack } from "../core/recall";
import { DEFAULT_MEMORY_BUDGET_CHARS, memoryManifest, packMemory } from "../core/recall";
import { recallTerms } from "../core/search-text";
import type { NativeMessage } from "../core/render";
import { messageChars } from "../core/render";
import type { Selection, SelectionFailure } from "../core/selection";
import { selectContext } from "../core/selection";
import type { MemoryDatabases } from "../storage/served-memory";
import { recallCandidates } from "../storage/served-memory";
import { agentReader } from "../core/memory-privacy";
import { logger } from "../logger";

export interface ServedWithMemory {
  readonly selection: Selection;
  /** Absent for a call without a query. */
  readonly memory: MemoryManifest | undefined;
}

type Selected = { ok: true; value: ServedWithMemory } | { ok: false; error: SelectionFailure };

/**
 * The selection, and with a `query` a memory envelope for it: the entries of the memory pages the
 * agent may be served here that match (`servedPages`: the facts extracted from this conversation,
 * and pages a person wrote, whole) and its turns older than the served tail, in one order
 * (`rankCandidates`), within `memoryBudgetChars` (envelope included),
 * reserved after the boundary and amendment envelopes and before the tail. The budget is capped by
 * what the agent's own caps leave, so memory never makes a context fail.
 *
 * "Older than the served tail" needs the tail, which needs the reservation. The tail of the
 * selection without memory starts at or before the tail of any selection with it (a reservation
 * only ever pushes the tail's start later), so turns recalled from before it are never also in the
 * tail, whatever the envelope's size. Pages and turns then take turns in one order: packing pages
 * first, or comparing the two stores' bm25 scores, let a few large pages shut out the turns that
 * held the answer.
 */
export async function selectWithMemory(
  db: MemoryDatabases,
  input: {
    readonly conversationId: string;
    readonly agent: AgentDeclaration;
    /** The caller's conversation scopes (core/memory-privacy); undefined when the service selects for the agent itself. */
    readonly scopes: readonly string[] | undefined;
    readonly query: string | undefined;
    readonly envelopes: readonly NativeMessage[];
    readonly groups: readonly Group[];
  },
): Promise<Selected> {
  const { agent, envelopes, groups, query } = input;
  const policy = agent.context;
  if (query === undefined) {
    const plain = selectContext({ envelopes, groups, policy });
    return plain.ok ? { ok: true, value: { selection: plain.value, memory: undefined } } : plain;
  }
  const fits = envelopes.length < policy.maxMessages;
  const budget = fits ? Math.max(0, Math.min(policy.memoryBudgetChars ?? DEFAULT_MEMORY_BUDGET_CHARS, policy.maxChars - messageChars(envelopes))) : 0;
  const select = (pack: MemoryPack): Selected => {
    const selected = selectContext({ envelopes: pack.envelope === undefined ? envelopes : [...envelopes, pack.envelope], groups, policy });
    return selected.ok ? { ok: true, value: { selection: selected.value, memory: memoryManifest(pack, budget) } } : selected;
  };
  if (budget === 0 || recallTerms(query).length === 0) return select({ hits: [], envelope: undefined });

  const plain = selectContext({ envelopes, groups, policy });
  if (!plain.ok) return plain;
  const tailStart = plain.value.tail.groups[0]?.seq;
  const view = { historyAgents: agent.historyAgents, admitSensitive: agent.admitSensitive, ...(tailStart === undefined ? {} : { beforeSeq: tailStart }) };
  const reader = { ...agentReader(input.conversationId, agent, input.scopes), agentId: agent.id };
  const started = Date.now();
  const pack = packMemory(await recallCandidates(db, reader, view, query, budget), budget);
  logger.info("recall", { conversationId: input.conversationId, agentId: agent.id, hits: pack.hits.length, envelopeChars: pack.envelope?.content.length ?? 0, ms: Date.now() - started });
  return select(pack);
}
