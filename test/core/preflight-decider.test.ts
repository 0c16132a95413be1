import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compactorRunEvent, failedAttemptEvent } from "../../src/core/compactor-runs";
import { compactionPolicySchema } from "../../src/core/declarations";
import { eventInputSchema } from "../../src/core/events";
import type { PreflightInput } from "../../src/core/preflight-decider";
import { compactionDue, decidePreflight, mayPlan, skippedRun } from "../../src/core/preflight-decider";

const policy = compactionPolicySchema.parse({ triggerInputChars: 1_000, retainInputChars: 400 });
const caps = { maxChars: 120_000, maxMessages: 40, maxAmendmentChars: 16_000 };
const NOW = 1_700_000_000_000;

const given = (overrides: Partial<PreflightInput> = {}): PreflightInput => ({
  compactorId: "agent-a.compactor",
  sourceSeq: 7,
  active: { chars: 500, messages: 4 },
  policy,
  caps,
  planOpen: false,
  backoffUntil: 0,
  now: NOW,
  ...overrides,
});

describe("decidePreflight", () => {
  it.each([
    ["below the trigger", {}, "below_trigger"],
    ["below the trigger, with a run in flight", { planOpen: true }, "below_trigger"],
    ["at the trigger with a run in flight", { active: { chars: 1_000, messages: 4 }, planOpen: true }, "compaction_in_flight"],
    ["at the trigger while backing off", { active: { chars: 1_000, messages: 4 }, backoffUntil: NOW + 1 }, "backoff"],
    ["in flight and backing off", { active: { chars: 5_000, messages: 4 }, planOpen: true, backoffUntil: NOW + 1 }, "compaction_in_flight"],
  ] as const)("given a chain %s, it records a skip (%s)", (_, overrides, reason) => {
    const decision = decidePreflight(given(overrides));
    expect(decision).toMatchObject({ action: "skip", reason });
  });

  it.each([
    ["at the trigger", { active: { chars: 1_000, messages: 4 } }],
    ["whose backoff has passed", { active: { chars: 1_000, messages: 4 }, backoffUntil: NOW }],
    ["near the agent's message cap, below the trigger", { active: { chars: 10, messages: 30 } }],
    ["near the agent's character cap", { active: { chars: 90_000, messages: 1 }, policy: { ...policy, triggerInputChars: 200_000 } }],
  ] as const)("given a chain %s, it plans", (_, overrides) => {
    expect(decidePreflight(given(overrides))).toEqual({ action: "plan" });
  });

  it("writes a content-dark skipped run: counts and the reason, keyed by compactor and source", () => {
    const decision = decidePreflight(given());
    if (decision.action !== "skip") throw new Error("expected a skip");
    expect(decision.event).toEqual({
      kind: "run",
      idempotencyKey: "run:pf_agent-a.compactor_7:skipped",
      sensitive: false,
      body: {
        runId: "pf_agent-a.compactor_7",
        agentId: "agent-a.compactor",
        role: "compactor",
        status: "skipped",
        detail: { sourceSeq: 7, activeChars: 500, activeMessages: 4, triggerInputChars: 1_000, reason: "below_trigger" },
      },
    });
    expect(eventInputSchema.safeParse(decision.event).success).toBe(true);
    expect(skippedRun(given(), "nothing_to_freeze").body).toMatchObject({ detail: { reason: "nothing_to_freeze" } });
  });

  it("plans exactly when the chain is due, nothing is in flight and no backoff holds it", () => {
    fc.assert(
      fc.property(
        fc.record({ chars: fc.nat(300_000), messages: fc.nat(100) }),
        fc.boolean(),
        fc.integer({ min: NOW - 5, max: NOW + 5 }),
        (active, planOpen, backoffUntil) => {
          const input = given({ active, planOpen, backoffUntil });
          const plans = decidePreflight(input).action === "plan";
          return plans === (compactionDue(active, policy, caps) && mayPlan(planOpen, backoffUntil, NOW));
        },
      ),
    );
  });
});

describe("compactor run events", () => {
  it("are valid log inputs, one idempotency key per run and status", () => {
    const planned = compactorRunEvent("agent-a.compactor", "cmp_1", "planned", { detail: { triggerSeq: 3 } });
    expect(planned.idempotencyKey).toBe("run:cmp_1:planned");
    expect(eventInputSchema.safeParse(planned).success).toBe(true);
  });

  it("bound a failed attempt's code and message to what the log accepts, keyed by attempt", () => {
    const failed = failedAttemptEvent("agent-a.compactor", "cmp_1", 2, "x".repeat(100), "y".repeat(5_000));
    expect(failed.idempotencyKey).toBe("run:cmp_1:failed:2");
    expect(failed.body).toMatchObject({ status: "failed", error: { code: "x".repeat(64), message: "y".repeat(1_000) }, detail: { attempt: 2 } });
    expect(eventInputSchema.safeParse(failed).success).toBe(true);
  });
});
