import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ExtractJob } from "../../src/core/jobs";
import { wakeAgent, wakeFailureMessage, wakeRun } from "../../src/core/wake-retries";
import type { ExtractionEvidence, ExtractionWake } from "../../src/core/wakeups";
import { armExtraction, dueWakes, extractionStep, wakeKey, wakeSchema } from "../../src/core/wakeups";

const GRACE = 900_000;
const HOUR = 3_600_000;
const job: ExtractJob = {
  type: "extract",
  conversationId: "api:c",
  agentId: "a",
  compactorId: "a.compactor",
  runId: "cmp_00000000-0000-4000-8000-000000000001",
  boundaryId: "bnd_00000000-0000-4000-8000-000000000001",
  model: "m",
  profile: "default",
};
const unseen: ExtractionEvidence = { settled: true, completed: false, attempted: false };

describe("an owed extraction's deadline", () => {
  it("is armed one grace after the settle, stores the job as it is sent, and is a deadline like the others", () => {
    const wake = armExtraction(job, 1_000, GRACE);
    expect(wake).toEqual({ kind: "extraction", at: 901_000, job, settledAt: 1_000, resends: 0 });
    expect(wakeSchema.parse(wake)).toEqual(wake);
    expect(wakeKey.extraction(job.runId)).toBe(`wake:extraction:${job.runId}`);
    expect(wakeKey.extraction(job.runId).startsWith(wakeKey.prefix)).toBe(true);
    expect(dueWakes(new Map([["x", wake]]), 900_999)).toEqual([]);
    expect(dueWakes(new Map([["x", wake]]), 901_000)).toHaveLength(1);
  });

  it.each([
    ["its boundary was never stored", { settled: false, completed: false, attempted: false }],
    ["the extraction completed", { settled: true, completed: true, attempted: false }],
    ["a delivery was seen and failed (the queue owns its retries)", { settled: true, completed: false, attempted: true }],
    ["it completed after failed attempts", { settled: true, completed: true, attempted: true }],
  ])("is let go when %s", (_why, evidence: ExtractionEvidence) => {
    expect(extractionStep(armExtraction(job, 0, GRACE), evidence, GRACE, GRACE)).toEqual({ action: "drop" });
  });

  it("sends the job again while it is unseen, each wait twice the last, at most an hour", () => {
    let wake: ExtractionWake = armExtraction(job, 0, GRACE);
    const waits: number[] = [];
    let now = wake.at;
    for (let i = 0; i < 5; i++) {
      const step = extractionStep(wake, unseen, now, GRACE);
      if (step.action !== "resend") throw new Error("an unseen extraction was let go");
      expect(step.next.job).toEqual(job);
      expect(step.next.resends).toBe(i + 1);
      waits.push(step.next.at - now);
      wake = step.next;
      now = wake.at;
    }
    expect(waits).toEqual([2 * GRACE, 4 * GRACE, HOUR, HOUR, HOUR]);
  });

  it("never lets an unseen one go and never sends a seen one again, whatever the evidence and the clock", () => {
    const evidence = fc.record({ settled: fc.boolean(), completed: fc.boolean(), attempted: fc.boolean() });
    fc.assert(
      fc.property(evidence, fc.nat(50), fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: 1_000, max: HOUR }), (found, resends, now, grace) => {
        const step = extractionStep({ ...armExtraction(job, 0, grace), resends }, found, now, grace);
        const owed = found.settled && !found.completed && !found.attempted;
        expect(step.action).toBe(owed ? "resend" : "drop");
        if (step.action === "resend") {
          expect(step.next.at).toBeGreaterThan(now);
          expect(step.next.at - now).toBeLessThanOrEqual(HOUR);
        }
      }),
    );
  });

  it("fails as the extraction's agent and run, in words that name the boundary and not the conversation", () => {
    const wake = armExtraction(job, 0, GRACE);
    expect(wakeAgent(wake)).toBe("a");
    expect(wakeRun(wake)).toBe("ext_00000000-0000-4000-8000-000000000001");
    expect(wakeRun({ kind: "catch_up", at: 0 })).toBeNull();
    const { message, detail } = wakeFailureMessage(wake, 3, 0, new Error("Queue send failed: internal error"));
    expect(message).toContain(job.boundaryId);
    expect(message).toContain("3 times in a row");
    // What the error said is private detail; the operator's message is ids and counts.
    expect(message).not.toContain("Queue send failed");
    expect(detail).toBe("Queue send failed: internal error");
  });
});
