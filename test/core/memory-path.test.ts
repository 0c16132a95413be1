import { describe, expect, it } from "vitest";
import { MAX_MEMORY_PAGE_CHARS, MAX_MEMORY_PATH_CHARS, memoryContentSchema, memoryPathSchema, putMemoryPageSchema } from "../../src/core/memory-path";

const messagesOf = (result: { success: boolean; error?: { issues: readonly { message: string }[] } }): string[] => result.error?.issues.map((i) => i.message) ?? [];

describe("memoryPathSchema", () => {
  it.each(["decisions/vendor.pkf", "a", "a.b/c_d/e-f", "x".repeat(MAX_MEMORY_PATH_CHARS), "...", "a/.b/c.."])("accepts %j", (path) => {
    expect(memoryPathSchema.safeParse(path).success).toBe(true);
  });

  it.each([
    ["", "Too small"],
    ["x".repeat(MAX_MEMORY_PATH_CHARS + 1), "Too big"],
    ["/a", "empty path segment"],
    ["a/", "empty path segment"],
    ["a//b", "empty path segment"],
    ["a/b c", "letters, digits"],
    ["a/é", "letters, digits"],
    ["a/%2e", "letters, digits"],
    ["./a", "cannot be . or .."],
    ["a/../b", "cannot be . or .."],
    ["a/..", "cannot be . or .."],
  ])("refuses %j (%s)", (path, reason) => {
    const result = memoryPathSchema.safeParse(path);
    expect(result.success).toBe(false);
    const messages = messagesOf(result);
    expect(messages.some((m) => m.includes(reason))).toBe(true);
  });

  it("reports one issue for a path with several bad segments: the first one found", () => {
    expect(messagesOf(memoryPathSchema.safeParse("a//b c/.."))).toEqual(["empty path segment (leading, trailing or doubled /)"]);
    expect(messagesOf(memoryPathSchema.safeParse("b c//.."))).toEqual(["path segments hold only letters, digits, . _ -"]);
    expect(messagesOf(memoryPathSchema.safeParse("../b c"))).toEqual(["path segments cannot be . or .."]);
    for (const path of ["a//b", "b c", ".."]) expect(memoryPathSchema.safeParse(path).error?.issues.map((i) => i.code)).toEqual(["custom"]);
  });
});

describe("memoryContentSchema", () => {
  it("accepts one character up to the page limit", () => {
    expect(memoryContentSchema.safeParse("x").success).toBe(true);
    expect(memoryContentSchema.safeParse("x".repeat(MAX_MEMORY_PAGE_CHARS)).success).toBe(true);
    expect(memoryContentSchema.safeParse("paired \u{1F600} emoji").success).toBe(true);
  });

  it("refuses an empty page, one past the limit, and lone surrogates", () => {
    expect(memoryContentSchema.safeParse("").success).toBe(false);
    expect(memoryContentSchema.safeParse("x".repeat(MAX_MEMORY_PAGE_CHARS + 1)).success).toBe(false);
    for (const lone of ["\uD800", "a\uDC00b", "end\uD83D"]) {
      expect(messagesOf(memoryContentSchema.safeParse(lone))).toEqual(["content must be well-formed Unicode (no lone surrogates)"]);
    }
  });

  it("a page body holds content and nothing else", () => {
    expect(putMemoryPageSchema.safeParse({ content: "Venue: Lisbon." }).success).toBe(true);
    expect(putMemoryPageSchema.safeParse({ content: "Venue: Lisbon.", path: "decisions/venue" }).success).toBe(false);
    expect(putMemoryPageSchema.safeParse({}).success).toBe(false);
  });
});
