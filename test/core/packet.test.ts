import { describe, expect, it } from "vitest";
import { pageBudget, sliceConversationType } from "../../src/core/packet";

describe("sliceConversationType", () => {
  it.each([
    [["direct", "direct"], "direct"],
    [["direct", "group"], "group"],
    [["group"], "group"],
    // A source that does not say is a group: nobody is bound as the sole sender by a guess.
    [[undefined], "group"],
    [["direct", undefined], "group"],
    [[], "group"],
  ] as const)("%j is %s", (declared, expected) => {
    expect(sliceConversationType(declared)).toBe(expected);
  });
});

describe("pageBudget", () => {
  const doc = (content: string) => ({ name: "d", hash: "a".repeat(64), content });

  it("charges the documents exactly as sent and leaves the rest to memory pages", () => {
    expect(pageBudget([doc("x".repeat(300)), doc("y".repeat(200))], 4_000)).toEqual({ ok: true, value: 3_500 });
    expect(pageBudget([], 4_000)).toEqual({ ok: true, value: 4_000 });
    expect(pageBudget([doc("x".repeat(4_000))], 4_000)).toEqual({ ok: true, value: 0 });
  });

  it("refuses documents that do not fit rather than cutting one", () => {
    expect(pageBudget([doc("x".repeat(4_001))], 4_000)).toMatchObject({ ok: false, error: { code: "document_budget_exceeded", message: expect.stringContaining("4001") } });
  });
});
