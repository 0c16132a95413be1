import { describe, expect, it } from "vitest";
import { failedAttemptEvent } from "../../src/core/compactor-runs";
import { runBodySchema } from "../../src/core/events";
import { sha256Hex } from "../../src/core/hash";

describe("failedAttemptEvent: which delivery an attempt belongs to", () => {
  it("without a delivery, keys the attempt by run and number and names no delivery", () => {
    const event = failedAttemptEvent("a.compactor", "cmp_1", 2, "timeout", "no answer", { ms: 30_000 });
    expect(event).toEqual({
      kind: "run",
      idempotencyKey: "run:cmp_1:failed:2",
      sensitive: false,
      body: { runId: "cmp_1", agentId: "a.compactor", role: "compactor", status: "failed", error: { code: "timeout", message: "no answer" }, detail: { ms: 30_000, attempt: 2 } },
    });
  });

  it("with a queue message's id that is a plain token, keys it by that id as it is", () => {
    const event = failedAttemptEvent("a.compactor", "cmp_1", 1, "timeout", "no answer", {}, "5f3a9c0e12ab");
    expect(event.idempotencyKey).toBe("run:cmp_1:failed:5f3a9c0e12ab:1");
    expect(event.body).toMatchObject({ detail: { attempt: 1, delivery: "5f3a9c0e12ab" } });
    // Two copies of one job (the watchdog's re-send) both at attempt 1: two keys, two events.
    expect(failedAttemptEvent("a.compactor", "cmp_1", 1, "timeout", "no answer", {}, "other-copy").idempotencyKey).not.toBe(event.idempotencyKey);
  });

  it("with any other id, keys it by a digest: printable, bounded, the same for the same id", () => {
    const longest = "x".repeat(64);
    expect(failedAttemptEvent("a.compactor", "cmp_1", 1, "c", "m", {}, longest).idempotencyKey).toBe(`run:cmp_1:failed:${longest}:1`);
    for (const delivery of ["x".repeat(65), "id with spaces", "ключ", "a/b", "", "-" + "é"]) {
      const digest = sha256Hex(delivery).slice(0, 32);
      const event = failedAttemptEvent("a.compactor", "cmp_1", 3, "c", "m", {}, delivery);
      expect(event.idempotencyKey, delivery).toBe(`run:cmp_1:failed:${digest}:3`);
      expect(event.body).toMatchObject({ detail: { delivery: digest } });
      expect(runBodySchema.safeParse(event.body).success, delivery).toBe(true);
    }
  });
});
