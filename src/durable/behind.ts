import type { Incident } from "../incidents";
import { opsText } from "../core/ops-text";
import type { HotChain, WindowBound } from "./hot-chain";

/**
 * A chain behind its log (`hot-chain` `holdPrefix`) is one open incident while it lasts: raised
 * when it falls behind and on every context call it refuses (counted, paged once), closed when it
 * caught up (`ChainBook.readOn`).
 */
export const BEHIND = { kind: "compaction_stalled", code: "window_bound" } as const;

export function behindIncident(conversationId: string, chain: HotChain, bound: WindowBound, now: Date): Incident {
  return {
    conversationId,
    agentId: chain.declaration.agentId,
    runId: chain.openPlan?.runId ?? null,
    ...BEHIND,
    message: opsText`the chain holds its uncovered history through seq ${chain.behind ?? chain.lastSeenSeq} only (at most ${bound.events} events, ${bound.chars} characters); its context is refused until its compactions catch up`,
    createdAt: now.toISOString(),
  };
}
