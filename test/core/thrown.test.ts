import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { describeThrown } from "../../src/core/thrown";

describe("describeThrown", () => {
  it.each([
    [new SyntaxError("Unexpected token '<'"), "uncaught_syntaxerror", "SyntaxError: Unexpected token '<'"],
    [new TypeError("x is undefined"), "uncaught_typeerror", "TypeError: x is undefined"],
    ["plain string", "uncaught_string", "string: plain string"],
    [undefined, "uncaught_undefined", "undefined: "],
    [Object.assign(new Error("odd"), { name: "Weird Name!!" }), "uncaught_weird_name", "Weird Name!!: odd"],
    [Object.assign(new Error("odd"), { name: "!!Weird--Name" }), "uncaught_weird_name", "!!Weird--Name: odd"],
  ])("%s → %s", (thrown, code, message) => {
    expect(describeThrown(thrown)).toEqual({ code, message });
  });

  it("cuts a long name's code at 64 characters and a long message at 1,000", () => {
    const { code, message } = describeThrown(Object.assign(new Error("m".repeat(2_000)), { name: "N".repeat(100) }));
    expect(code).toBe(`uncaught_${"n".repeat(55)}`);
    expect(message).toBe(`${"N".repeat(100)}: ${"m".repeat(898)}`);
  });

  it("always yields a bounded code from a closed alphabet", () => {
    fc.assert(
      fc.property(fc.anything(), fc.string(), (value, name) => {
        const error = Object.assign(new Error("m"), { name });
        for (const thrown of [value, error]) {
          const { code, message } = describeThrown(thrown);
          expect(code).toMatch(/^uncaught_[a-z0-9_]{1,55}$/);
          expect(message.length).toBeLessThanOrEqual(1_000);
        }
      }),
    );
  });
});
