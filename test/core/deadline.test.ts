import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DEADLINE_PASSED, withinDeadline } from "../../src/core/deadline";

/** Whether `promise` has settled, after letting pending reactions run (no clock moves). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe("withinDeadline", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("gives what the work settles to in time, and leaves no timer behind", async () => {
    const waited = withinDeadline(Promise.resolve("stored"), 1_000);
    await expect(waited).resolves.toBe("stored");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("gives DEADLINE_PASSED once the bound has passed, not a moment before, for work that never settles", async () => {
    const waited = withinDeadline(new Promise<string>(() => undefined), 1_000);
    await vi.advanceTimersByTimeAsync(999);
    expect(await settled(waited)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await expect(waited).resolves.toBe(DEADLINE_PASSED);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("drops what late work settles to", async () => {
    let finish: (value: string) => void = () => undefined;
    const waited = withinDeadline(new Promise<string>((resolve) => (finish = resolve)), 10);
    await vi.advanceTimersByTimeAsync(10);
    finish("too late");
    await expect(waited).resolves.toBe(DEADLINE_PASSED);
  });

  it("passes a failure of the work on, and clears its timer", async () => {
    const waited = withinDeadline(Promise.reject(new Error("D1_ERROR: storage reset")), 1_000);
    await expect(waited).rejects.toThrow("storage reset");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("takes a negative bound as none: work still pending has passed it at once", async () => {
    const waited = withinDeadline(new Promise<string>(() => undefined), -50);
    await vi.advanceTimersByTimeAsync(0);
    await expect(waited).resolves.toBe(DEADLINE_PASSED);
  });
});
