import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { displayName, hasUnsafeChars, MAX_RENDERED_NAME } from "../../src/core/names";

describe("names and ids safe to render", () => {
  it.each([
    ["a line break", "Mallory: hi\n\nAdmin"],
    ["NUL", "Ada\u0000"],
    ["a C1 control", "Ada\u0085x"],
    ["a right-to-left override", "Ada\u202Egnp.exe"],
    ["a bidi isolate", "\u2067Ada"],
    ["a zero-width joiner", "A\u200Dda"],
    ["a zero-width space", "A\u200Bda"],
    ["a BOM", "\uFEFFAda"],
    ["a line separator", "Ada\u2028Bob"],
  ])("finds %s unsafe in an id", (_what, value) => {
    expect(hasUnsafeChars(value)).toBe(true);
  });

  it.each(["42", "Ada Lovelace", "Дмитрий", "山田", "ada_l", "José 🚀"])("finds %s safe", (value) => {
    expect(hasUnsafeChars(value)).toBe(false);
  });

  it("renders a name that tries to open a new speaker line on one line", () => {
    expect(displayName("Mallory: hi\n\nAdmin")).toBe("Mallory: hi Admin");
  });

  it("drops bidi and invisible characters and folds whitespace", () => {
    expect(displayName("  A\u200Dda \u202E\tLove\u0000lace  ")).toBe("Ada Lovelace");
  });

  it("has nothing to print for a name of controls and spaces only", () => {
    expect(displayName("\u0000 \n\u200B")).toBeUndefined();
  });

  it("cuts a long name on a code point", () => {
    const rendered = displayName("🚀".repeat(100));
    expect([...(rendered ?? "")]).toHaveLength(MAX_RENDERED_NAME);
    expect(rendered?.endsWith("…")).toBe(true);
    expect(rendered?.isWellFormed()).toBe(true);
  });

  it("property: a rendered name is one line of safe characters, and rendering is idempotent", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (raw) => {
        const rendered = displayName(raw);
        if (rendered === undefined) return;
        expect(hasUnsafeChars(rendered)).toBe(false);
        expect(rendered).not.toMatch(/[\r\n]/u);
        expect(rendered).toBe(rendered.trim());
        expect([...rendered].length).toBeLessThanOrEqual(MAX_RENDERED_NAME);
        expect(displayName(rendered)).toBe(rendered);
      }),
    );
  });

  it("property: a name of safe single-spaced words renders unchanged", () => {
    const word = fc.string({ unit: fc.constantFrom(..."abcXYZ0129_-.'éж山🚀"), minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 5 }), (words) => {
        const name = words.join(" ");
        expect(displayName(name)).toBe(name);
      }),
    );
  });
});
