import type { Group } from "../core/compaction-plan";
import type { AgentDeclaration } from "../core/declarations";
import type { MemoryManifest, MemoryPack } from "../core/recall";
import { DEFAULT_MEMORY_BUDGET_CHARS, memoryManifest, mergeHits, packMemory } from "../core/recall";
import type { NativeMessage } from "../core/render";
import { messageChars } from "../core/render";
import type { Selection, SelectionFailure } from "../core/selection";
import { selectContext } from "../core/selection";
import { recallMatchExpression } from "../storage/memory-store";
import { searchPages, searchTurns } from "../storage/recall-store";

/** Ranked candidates read per store before packing: a budget of a few thousand characters holds far fewer. */
const MEMORY_CANDIDATES = 20;

export interface ServedWithMemory {
  readonly selection: Selection;
  /** Absent for a call without a query. */
  readonly memory: MemoryManifest | undefined;
}

type Selected = { ok: true; value: ServedWithMemory } | { ok: false; error: SelectionFailure };

/**
 * The selection, and with a `query` a memory envelope for it: the agent's pages and its turns older
 * than the served tail, in one bm25 order, whole, within `memoryBudgetChars` (envelope included),
 * reserved after the boundary and amendment envelopes and before the tail. The budget is capped by
 * what the agent's own caps leave, so memory never makes a context fail.
 *
 * "Older than the served tail" needs the tail, which needs the reservation. The tail of the
 * selection without memory starts at or before the tail of any selection with it (a reservation
 * only ever pushes the tail's start later), so turns recalled from before it are never also in the
 * tail, whatever the envelope's size. Pages and turns then compete in one rank order: packing pages
 * first let a few large pages shut out the turns that held the answer.
 */
export async function selectWithMemory(
  db: D1Database,
  input: { readonly conversationId: string; readonly agent: AgentDeclaration; readonly query: string | undefined; readonly envelopes: readonly NativeMessage[]; readonly groups: readonly Group[] },
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
  const match = recallMatchExpression(query);
  if (budget === 0 || match === undefined) return select({ hits: [], envelope: undefined });

  const plain = selectContext({ envelopes, groups, policy });
  if (!plain.ok) return plain;
  const tailStart = plain.value.tail.groups[0]?.seq;
  const view = { historyAgents: agent.historyAgents, admitSensitive: agent.admitSensitive, ...(tailStart === undefined ? {} : { beforeSeq: tailStart }) };
  const [pages, turns] = await Promise.all([searchPages(db, agent.id, match, MEMORY_CANDIDATES), searchTurns(db, input.conversationId, match, view, MEMORY_CANDIDATES)]);
  return select(packMemory(mergeHits(pages, turns, pages.length + turns.length), budget));
}
