import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { WakeStreak } from "../../src/core/wake-retries";
import { WAKE_FAILURES_BEFORE_INCIDENT, WAKE_RETRY_BASE_MS, wakeAgent, wakeFailureMessage, wakeFailureStep, wakeRetryBaseMs, wakeRun } from "../../src/core/wake-retries";

/** Folds `n` failures from no streak, as a deadline that keeps failing does, with the incident raised whenever asked. */
function failTimes(n: number, baseMs: number): { raises: (number | undefined)[]; delays: number[]; streak: WakeStreak | undefined } {
  let streak: WakeStreak | undefined;
  const raises: (number | undefined)[] = [];
  const delays: number[] = [];
  for (let i = 0; i < n; i++) {
    const step = wakeFailureStep(streak, 1_000, baseMs);
    raises.push(step.raise);
    delays.push(step.retryAt - 1_000);
    streak = step.raise === undefined ? step.streak : { ...step.streak, raised: true };
  }
  return { raises, delays, streak };
}

describe("a deadline that fails", () => {
  it("retries a reply hand-off from a second, every other deadline from thirty", () => {
    expect(wakeRetryBaseMs({ kind: "reply_handoff", at: 0, sources: [{ seq: 1, hash: "a".repeat(64) }], failures: 0 })).toBe(1_000);
    expect(wakeRetryBaseMs({ kind: "catch_up", at: 0 })).toBe(WAKE_RETRY_BASE_MS);
  });

  it("backs off doubling from the base, at most an hour", () => {
    expect(failTimes(5, 30_000).delays).toEqual([30_000, 60_000, 120_000, 240_000, 480_000]);
    expect(failTimes(20, 30_000).delays.at(-1)).toBe(3_600_000);
    expect(failTimes(3, 1_000).delays).toEqual([1_000, 2_000, 4_000]);
  });

  it("raises nothing below the threshold, the whole streak at it, and one occurrence for each failure after", () => {
    const { raises, streak } = failTimes(WAKE_FAILURES_BEFORE_INCIDENT + 2, 30_000);
    expect(raises).toEqual([...Array.from({ length: WAKE_FAILURES_BEFORE_INCIDENT - 1 }, () => undefined), WAKE_FAILURES_BEFORE_INCIDENT, 1, 1]);
    expect(streak).toEqual({ failures: WAKE_FAILURES_BEFORE_INCIDENT + 2, raised: true });
  });

  it("counts every failure exactly once in the incident, however long the streak", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), (n) => {
        const raised = failTimes(n, 30_000).raises.reduce<number>((sum, r) => sum + (r ?? 0), 0);
        expect(raised).toBe(n >= WAKE_FAILURES_BEFORE_INCIDENT ? n : 0);
      }),
    );
  });

  it("a raise that failed is made with the whole streak at the next failure", () => {
    const unraised: WakeStreak = { failures: WAKE_FAILURES_BEFORE_INCIDENT, raised: false };
    expect(wakeFailureStep(unraised, 0, 1).raise).toBe(WAKE_FAILURES_BEFORE_INCIDENT + 1);
  });

  it("names the chain it belongs to, or none for the conversation's catch-up, and keeps its message bounded", () => {
    expect(wakeAgent({ kind: "catch_up", at: 0 })).toBeNull();
    expect(wakeAgent({ kind: "replan", at: 0, agentId: "a", epochId: "e", failures: 1 })).toBe("a");
    const handoff = { kind: "reply_handoff" as const, at: 0, sources: [{ seq: 1, hash: "a".repeat(64) }], failures: 0 };
    expect(wakeAgent(handoff)).toBeNull();
    expect(wakeRun(handoff)).toBeNull();
    const { message, detail } = wakeFailureMessage({ kind: "catch_up", at: 0 }, 3, 0, new Error(`said ${"x".repeat(1_000)}`));
    expect(message).toBe("the catch_up deadline failed 3 times in a row, retried with backoff (next at 1970-01-01T00:00:00.000Z)");
    // What the error said is the incident's private detail, bounded, never the operator's message.
    expect(detail).toBe(`said ${"x".repeat(295)}`);
    const extraction = wakeFailureMessage({ kind: "extraction", at: 0, job: { boundaryId: "b-1" } } as unknown as Parameters<typeof wakeFailureMessage>[0], 2, 0, "down");
    expect(extraction).toEqual({ message: "the extraction of b-1 could not be sent again 2 times in a row, retried with backoff (next at 1970-01-01T00:00:00.000Z)", detail: "down" });
  });
});
