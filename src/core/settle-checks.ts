import type { Result } from "./errors";

/**
 * The checks a compactor's output passes before it becomes the chain's next boundary, one function
 * each, every refusal a tagged value; `settleError` maps them to the settle call's error codes once.
 * Only the current plan of the current epoch, whose previous boundary is still the head the log
 * anchors, may settle: anything else would fork the chain or summarize a slice nobody serves.
 */

export type SettleError = "fabricated_run" | "stale_plan" | "packet_unreadable" | "chain_invalid";

export type SettleRefusal =
  | { readonly reason: "unknown_plan"; readonly runId: string }
  | { readonly reason: "retired_epoch"; readonly runId: string }
  | { readonly reason: "not_current"; readonly runId: string }
  | { readonly reason: "unanchored_head"; readonly previousBoundaryId: string; readonly anchoredBoundaryId: string }
  | { readonly reason: "packet_unreadable"; readonly detail: "missing" | "hash_mismatch" | "invalid" };

interface ChainPosition {
  readonly openPlan: { readonly runId: string } | undefined;
  readonly head: { readonly body: { readonly id: string } } | undefined;
}

interface PlanOwner {
  readonly runId: string;
  readonly conversationId: string;
  readonly epochId: string;
  readonly previousBoundaryId: string;
}

/** A plan of this conversation (a run id from elsewhere, or none, is fabricated). */
export function checkPlanExists<P extends PlanOwner>(runId: string, plan: P | undefined, conversationId: string): Result<P, SettleRefusal> {
  return plan === undefined || plan.conversationId !== conversationId ? { ok: false, error: { reason: "unknown_plan", runId } } : { ok: true, value: plan };
}

/** A plan of the epoch the agent's current declaration serves. */
export function checkPlanEpoch<D extends { readonly epoch: { readonly id: string } }>(plan: PlanOwner, declaration: D | undefined): Result<D, SettleRefusal> {
  return declaration === undefined || declaration.epoch.id !== plan.epochId ? { ok: false, error: { reason: "retired_epoch", runId: plan.runId } } : { ok: true, value: declaration };
}

/** The chain's open plan, made after the chain's head (a chain with no head has previous boundary ""). */
export function checkPlanCurrent<C extends ChainPosition>(plan: PlanOwner, chain: C | undefined): Result<C, SettleRefusal> {
  const current = chain !== undefined && chain.openPlan?.runId === plan.runId && plan.previousBoundaryId === (chain.head?.body.id ?? "");
  return current ? { ok: true, value: chain } : { ok: false, error: { reason: "not_current", runId: plan.runId } };
}

/**
 * The plan follows the head the log anchors, not merely the newest row: after a head row was
 * deleted by hand the chain stays refused rather than settling a successor of an older one.
 */
export function checkAnchor(
  plan: PlanOwner,
  anchor: { readonly boundaryId: string; readonly boundaryHash: string } | undefined,
  headHash: string | undefined,
): SettleRefusal | undefined {
  if (anchor === undefined || (anchor.boundaryId === plan.previousBoundaryId && anchor.boundaryHash === headHash)) return undefined;
  return { reason: "unanchored_head", previousBoundaryId: plan.previousBoundaryId, anchoredBoundaryId: anchor.boundaryId };
}

export function settleError(refusal: SettleRefusal): { code: SettleError; message: string } {
  switch (refusal.reason) {
    case "unknown_plan":
      return { code: "fabricated_run", message: `no plan ${refusal.runId} in this conversation` };
    case "retired_epoch":
      return { code: "stale_plan", message: "the plan belongs to a retired epoch" };
    case "not_current":
      return { code: "stale_plan", message: "the plan is not the chain's current plan" };
    case "unanchored_head":
      return { code: "chain_invalid", message: `the plan follows ${refusal.previousBoundaryId || "(none)"}, the log's newest completed run settled ${refusal.anchoredBoundaryId}` };
    case "packet_unreadable":
      return { code: "packet_unreadable", message: `packet ${refusal.detail}` };
  }
}
