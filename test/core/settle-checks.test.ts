import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { SettleRefusal } from "../../src/core/settle-checks";
import { checkAnchor, checkPlanCurrent, checkPlanEpoch, checkPlanExists, settleError } from "../../src/core/settle-checks";

const CONVERSATION = "api:settle";
const plan = { runId: "cmp_2", conversationId: CONVERSATION, agentId: "agent-a", epochId: "v1:e", previousBoundaryId: "bnd_1" };
const chain = (openRunId: string | undefined, headId: string | undefined) => ({
  openPlan: openRunId === undefined ? undefined : { runId: openRunId },
  head: headId === undefined ? undefined : { body: { id: headId } },
});

describe("settle checks", () => {
  it("refuse a run with no plan in this conversation as fabricated", () => {
    expect(checkPlanExists("cmp_2", undefined, CONVERSATION)).toEqual({ ok: false, error: { reason: "unknown_plan", runId: "cmp_2" } });
    expect(checkPlanExists("cmp_2", { ...plan, conversationId: "api:other" }, CONVERSATION)).toMatchObject({ ok: false, error: { reason: "unknown_plan" } });
    expect(checkPlanExists("cmp_2", plan, CONVERSATION)).toEqual({ ok: true, value: plan });
  });

  it("refuse a plan of an epoch the agent no longer serves", () => {
    expect(checkPlanEpoch(plan, undefined)).toMatchObject({ ok: false, error: { reason: "retired_epoch" } });
    expect(checkPlanEpoch(plan, { epoch: { id: "v1:newer" } })).toMatchObject({ ok: false, error: { reason: "retired_epoch" } });
    expect(checkPlanEpoch(plan, { epoch: { id: "v1:e" } })).toMatchObject({ ok: true });
  });

  it.each([
    ["no chain", undefined],
    ["another open plan", chain("cmp_3", "bnd_1")],
    ["no open plan", chain(undefined, "bnd_1")],
    ["a head that moved on", chain("cmp_2", "bnd_9")],
    ["no head at all", chain("cmp_2", undefined)],
  ] as const)("refuse a plan that is not its chain's current one: %s", (_, state) => {
    expect(checkPlanCurrent(plan, state)).toEqual({ ok: false, error: { reason: "not_current", runId: "cmp_2" } });
  });

  it("accept the chain's open plan after its head, and a first plan on a chain with no head", () => {
    expect(checkPlanCurrent(plan, chain("cmp_2", "bnd_1"))).toMatchObject({ ok: true });
    expect(checkPlanCurrent({ ...plan, previousBoundaryId: "" }, chain("cmp_2", undefined))).toMatchObject({ ok: true });
  });

  it("accept exactly the chain's open plan made after its head", () => {
    fc.assert(
      fc.property(fc.constantFrom("cmp_1", "cmp_2", undefined), fc.constantFrom("bnd_1", "bnd_2", undefined), fc.constantFrom("", "bnd_1", "bnd_2"), (open, head, previous) => {
        const accepted = checkPlanCurrent({ ...plan, previousBoundaryId: previous }, chain(open, head)).ok;
        return accepted === (open === plan.runId && previous === (head ?? ""));
      }),
    );
  });

  it("refuse a plan that does not follow the head the log anchors", () => {
    const anchor = { boundaryId: "bnd_1", boundaryHash: "a".repeat(64) };
    expect(checkAnchor(plan, undefined, undefined)).toBeUndefined();
    expect(checkAnchor(plan, anchor, "a".repeat(64))).toBeUndefined();
    expect(checkAnchor(plan, anchor, "b".repeat(64))).toEqual({ reason: "unanchored_head", previousBoundaryId: "bnd_1", anchoredBoundaryId: "bnd_1" });
    // The hash alone does not do: the anchor must name the boundary the plan follows.
    expect(checkAnchor(plan, { ...anchor, boundaryId: "bnd_0" }, "a".repeat(64))).toEqual({ reason: "unanchored_head", previousBoundaryId: "bnd_1", anchoredBoundaryId: "bnd_0" });
    expect(checkAnchor({ ...plan, previousBoundaryId: "" }, anchor, undefined)).toMatchObject({ reason: "unanchored_head", previousBoundaryId: "" });
  });

  it.each([
    [{ reason: "unknown_plan", runId: "cmp_2" }, "fabricated_run", "no plan cmp_2 in this conversation"],
    [{ reason: "retired_epoch", runId: "cmp_2" }, "stale_plan", "the plan belongs to a retired epoch"],
    [{ reason: "not_current", runId: "cmp_2" }, "stale_plan", "the plan is not the chain's current plan"],
    [{ reason: "unanchored_head", previousBoundaryId: "", anchoredBoundaryId: "bnd_1" }, "chain_invalid", "the plan follows (none), the log's newest completed run settled bnd_1"],
    [{ reason: "packet_unreadable", detail: "hash_mismatch" }, "packet_unreadable", "packet hash_mismatch"],
  ] as [SettleRefusal, string, string][])("map %j to the settle error %s", (refusal, code, message) => {
    expect(settleError(refusal)).toEqual({ code, message });
  });
});
