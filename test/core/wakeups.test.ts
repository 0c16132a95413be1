import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Wake } from "../../src/core/wakeups";
import { armReplyHandoff, armWatchdog, dueWakes, earliestWake, handoffFailed, HANDOFF_GRACE_MS, replanWake, watchdogStep, wakeKey, wakeSchema } from "../../src/core/wakeups";

const policy = { watchdogMs: 900_000, stalledMs: 3_600_000 };
const plan = { agentId: "a", epochId: "e", runId: "cmp_1", createdAt: 1_000 };

describe("wake-ups", () => {
  it("the alarm goes to the earliest deadline, and only due ones are handled, earliest first", () => {
    const wakes = new Map<string, Wake>([
      ["w", armWatchdog(plan, 1, 1_000, policy)],
      ["r", replanWake("b", "e", 1, 30_000, 0)],
      ["c", { kind: "catch_up", at: 5 }],
    ]);
    expect(earliestWake(wakes.values())).toBe(5);
    expect(earliestWake([])).toBeUndefined();
    expect(earliestWake([{ kind: "catch_up", at: 5 }, { kind: "catch_up", at: 7 }])).toBe(5);
    expect(dueWakes(wakes, 30_000).map(([key]) => key)).toEqual(["c", "r"]);
    expect(dueWakes(wakes, 4)).toEqual([]);
  });

  it("a plan found open without a watchdog is watched from now at the latest, never in the past", () => {
    expect(armWatchdog(plan, 1, 1_000, policy)).toEqual({ kind: "plan_watchdog", at: 901_000, agentId: "a", epochId: "e", runId: "cmp_1", planCreatedAt: 1_000, dispatches: 1, stalledReported: false });
    expect(armWatchdog(plan, 1, 5_000_000, policy).at).toBe(5_000_000);
  });

  it("a due watchdog re-sends while its plan is open, pages once past the stall threshold, and drops otherwise", () => {
    const wake = armWatchdog(plan, 1, 1_000, policy);
    expect(watchdogStep(wake, undefined, 901_000, policy)).toEqual({ action: "drop" });
    expect(watchdogStep(wake, "cmp_other", 901_000, policy)).toEqual({ action: "drop" });
    const early = watchdogStep(wake, "cmp_1", 901_000, policy);
    expect(early).toMatchObject({ action: "redispatch", stalled: false, next: { at: 1_801_000, dispatches: 2, stalledReported: false } });
    if (early.action !== "redispatch") throw new Error("unreachable");
    const late = watchdogStep(early.next, "cmp_1", 3_601_000, policy);
    expect(late).toMatchObject({ action: "redispatch", stalled: true, next: { dispatches: 3, stalledReported: true } });
    if (late.action !== "redispatch") throw new Error("unreachable");
    expect(watchdogStep(late.next, "cmp_1", 9_000_000, policy)).toMatchObject({ action: "redispatch", stalled: false });
  });

  it("counts a plan's stall from when the plan was created", () => {
    const recent = armWatchdog({ ...plan, createdAt: 50_000_000 }, 1, 50_000_000, policy);
    expect(watchdogStep(recent, "cmp_1", 50_900_000, policy)).toMatchObject({ stalled: false });
    expect(watchdogStep(recent, "cmp_1", 53_600_000, policy)).toMatchObject({ stalled: true });
  });

  it("however often it fires, a watchdog pages at most once per plan and always moves its deadline forward", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 10_000_000 }), { maxLength: 30 }), (gaps) => {
        let wake = armWatchdog(plan, 1, 1_000, policy);
        let pages = 0;
        let now = 1_000;
        for (const gap of gaps) {
          now += gap;
          const step = watchdogStep(wake, "cmp_1", now, policy);
          if (step.action !== "redispatch") throw new Error("an open plan is never dropped");
          if (step.stalled) pages++;
          expect(step.next.at).toBeGreaterThan(now);
          wake = step.next;
        }
        expect(pages).toBeLessThanOrEqual(1);
      }),
    );
  });

  it("backs off exponentially per consecutive failure, at most an hour", () => {
    expect([1, 2, 3, 4].map((n) => replanWake("a", "e", n, 30_000, 0).at)).toEqual([30_000, 60_000, 120_000, 240_000]);
    expect(replanWake("a", "e", 40, 30_000, 0).at).toBe(3_600_000);
    expect(replanWake("a", "e", 2, 30_000, 1_000)).toEqual({ kind: "replan", agentId: "a", epochId: "e", failures: 2, at: 61_000 });
  });
});

describe("a reply hand-off", () => {
  const sources = [
    { seq: 7, hash: "a".repeat(64) },
    { seq: 9, hash: "b".repeat(64) },
  ];

  it("is armed with the sources' places and hashes, due after its grace, keyed by its first source", () => {
    const wake = armReplyHandoff(sources, 1_000);
    expect(wake).toEqual({ kind: "reply_handoff", at: 1_000 + HANDOFF_GRACE_MS, sources, failures: 0 });
    expect(wakeSchema.parse(wake)).toEqual(wake);
    expect(wakeKey.replyHandoff(7)).toBe("wake:reply:7");
  });

  it("backs off from a second, doubling per failure in a row, at most a minute", () => {
    let wake = armReplyHandoff(sources, 0);
    const waits: number[] = [];
    for (let i = 0; i < 9; i++) {
      wake = handoffFailed(wake, 100_000);
      waits.push(wake.at - 100_000);
    }
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    expect(wake.failures).toBe(9);
    expect(wake.sources).toEqual(sources);
  });

  it("is refused by the schema with no source or a hash that is not one", () => {
    expect(wakeSchema.safeParse({ kind: "reply_handoff", at: 0, sources: [], failures: 0 }).success).toBe(false);
    expect(wakeSchema.safeParse({ kind: "reply_handoff", at: 0, sources: [{ seq: 1, hash: "x" }], failures: 0 }).success).toBe(false);
  });
});
