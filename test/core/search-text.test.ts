import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_GRAM_POSITIONS, MAX_RECALL_TERMS, contentWords, foldSearchText, gramsOf, matchExpression, recallTerms, searchTerms } from "../../src/core/search-text";

describe("foldSearchText", () => {
  it.each([
    ["می‌خواهم", "میخواهم"], // zero-width non-joiner
    ["كتاب", "کتاب"], // Arabic kaf
    ["علي", "علی"], // Arabic yeh
    ["مدرسة", "مدرسه"], // teh marbuta
    ["أحمد إبراهيم آمد", "احمد ابراهیم امد"], // alef forms, yeh
    ["۱۴۵ و ١٤٥", "145 و 145"], // Persian and Arabic-Indic digits
    ["كـــتاب", "کتاب"], // tatweel
    ["Café 北京 Москва", "Café 北京 Москва"], // nothing else changes
  ])("%s → %s", (text, folded) => {
    expect(foldSearchText(text)).toBe(folded);
  });
});

describe("gramsOf", () => {
  it.each([
    ["我们的预算", ["我们", "们的", "的预", "预算"]],
    ["猫 and 狗", ["猫", "狗"]], // a run of one is itself
    ["预算，好吗", ["预算", "好吗"]], // punctuation outside the ranges ends a run
    ["ภาษาไทย", ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]],
    ["カタカナ", ["カタ", "タカ", "カナ"]],
    ["𠀀𠀁", ["𠀀𠀁"]], // astral ideographs are one character each
    ["plain English, русский, فارسی", []],
  ])("%s", (text, grams) => {
    expect(gramsOf(text)).toEqual(grams);
  });

  it(`takes grams from the first ${MAX_GRAM_POSITIONS} characters only`, () => {
    const grams = gramsOf("预".repeat(MAX_GRAM_POSITIONS + 10));
    expect(grams).toHaveLength(MAX_GRAM_POSITIONS - 1);
  });
});

describe("searchTerms and recallTerms", () => {
  it("leaves stop words, short words and runs of scripts without spaces to the grams", () => {
    expect(searchTerms("Where is the 团建 budget? 团建!")).toEqual(["budget", "团建", "团建"]);
    expect(recallTerms("Where is the 团建 budget? 团建!")).toEqual(["团建", "budget"]);
  });

  it("folds before it splits, so a word typed either way is one term", () => {
    expect(searchTerms("می‌خواهم")).toEqual(searchTerms("ميخواهم"));
  });

  it("counts grams as content, so novelty is judged in every script", () => {
    expect([...contentWords("预算是五千元")]).toEqual(["预算", "算是", "是五", "五千", "千元"]);
  });
});

describe("matchExpression", () => {
  it("quotes each term inside one column filter, OR-ed", () => {
    expect(matchExpression("the vendor VENDOR and compliance", ["text", "grams"])).toBe('{text grams} : ("vendor" OR "compliance")');
    expect(matchExpression("预算", ["grams"])).toBe('{grams} : ("预算")');
    expect(matchExpression("ok, so: is it?", ["text"])).toBeUndefined();
  });

  it("never lets the text become syntax, and caps the terms", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 400 }), (text) => {
        const expression = matchExpression(text, ["text"]);
        if (expression === undefined) return;
        const inner = /^\{text\} : \((.*)\)$/.exec(expression)?.[1] ?? "";
        const terms = inner.split(" OR ");
        expect(terms.length).toBeLessThanOrEqual(MAX_RECALL_TERMS);
        for (const term of terms) expect(term).toMatch(/^"[^"]+"$/);
      }),
    );
  });
});
