import { describe, expect, it } from "vitest";
import { ERROR_STATUS, fail, isErrorCode, ok, typedIssue } from "../../src/core/errors";

describe("errors", () => {
  it("every code has a 4xx or 5xx status", () => {
    for (const status of Object.values(ERROR_STATUS)) expect(status >= 400 && status < 600).toBe(true);
  });

  it("isErrorCode knows exactly the closed set, not inherited names", () => {
    for (const code of Object.keys(ERROR_STATUS)) expect(isErrorCode(code)).toBe(true);
    for (const other of ["toString", "constructor", "__proto__", "hasOwnProperty", "", "Chain_invalid", 404, null, undefined, { code: "internal" }, ["internal"], { toString: () => "internal" }]) {
      expect(isErrorCode(other)).toBe(false);
    }
  });

  it("fail carries details only when given; ok wraps the value", () => {
    expect(fail("not_found", "no such conversation")).toEqual({ ok: false, error: { code: "not_found", message: "no such conversation" } });
    expect("details" in fail("not_found", "no such conversation").error).toBe(false);
    expect(fail("sequence_conflict", "moved", { currentSeq: 4 })).toEqual({ ok: false, error: { code: "sequence_conflict", message: "moved", details: { currentSeq: 4 } } });
    expect(ok(3)).toEqual({ ok: true, value: 3 });
  });

  it("typedIssue puts the code in zod's issue params", () => {
    expect(typedIssue("unsafe_characters")).toEqual({ params: { code: "unsafe_characters" } });
  });
});
