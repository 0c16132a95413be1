import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitMessage, TELEGRAM_MAX_MESSAGE_CHARS } from "../../src/core/telegram-split";

const nonWhitespace = (text: string): string => text.replace(/\s/g, "");
const words = (text: string): string[] => text.split(/\s+/).filter((word) => word !== "");

/**
 * The parts read, in order, as the text with only whitespace left out between them: each part is
 * found at or after the end of the previous one, and what lies between (and after the last) is
 * whitespace. This is the splitter's whole contract on content.
 */
function expectPartsInOrder(text: string, parts: readonly string[]): void {
  let position = 0;
  for (const part of parts) {
    const at = text.indexOf(part, position);
    expect(at).toBeGreaterThanOrEqual(position);
    expect(text.slice(position, at).trim()).toBe("");
    position = at + part.length;
  }
  expect(text.slice(position).trim()).toBe("");
}

describe("splitMessage: where it cuts", () => {
  it.each([
    ["a text that fits is one part, unchanged", "  Hello, Ada.\n", 20, ["  Hello, Ada.\n"]],
    ["a text of exactly the limit is one part", "x".repeat(20), 20, ["x".repeat(20)]],
    ["an empty text is no message", "", 20, []],
    ["a blank text is no message", " \n\n\t ", 20, []],
    ["a blank text longer than the limit is no message", " ".repeat(50), 20, []],
    ["a paragraph break is preferred to a line break, a sentence end or a space", "First line.\nMore\n\nSecond part.", 20, ["First line.\nMore", "Second part."]],
    ["a line break is preferred to a sentence end or a space", "One. Two. Three\nfour five six", 20, ["One. Two. Three", "four five six"]],
    ["a sentence end is preferred to a space, and keeps its punctuation", "Is it done? Yes it is now", 20, ["Is it done?", "Yes it is now"]],
    ["an exclamation ends a sentence too", "We did it! Time to rest", 20, ["We did it!", "Time to rest"]],
    ["a space is used when nothing better fits", "alpha beta gamma delta epsilon", 20, ["alpha beta gamma", "delta epsilon"]],
    ["a word longer than the limit is cut hard", "x".repeat(45), 20, ["x".repeat(20), "x".repeat(20), "x".repeat(5)]],
    ["a boundary in the second half beats a better one early", "ab\n\ncdefghij klmnopqrst", 20, ["ab\n\ncdefghij", "klmnopqrst"]],
    ["an early boundary beats a hard cut", "ab\n\n" + "x".repeat(30), 20, ["ab", "x".repeat(20), "x".repeat(10)]],
    ["extra blank lines at a cut are consumed, the next line's indentation is kept", "function f() {\n\n\n\n  return 1;\n}", 20, ["function f() {", "  return 1;\n}"]],
    ["trailing spaces before a line break are consumed", "abcdefghijkl   \nmnop qrs tuv", 20, ["abcdefghijkl", "mnop qrs tuv"]],
    ["spaces after a sentence end are consumed", "Short one.      Then more words", 20, ["Short one.", "Then more words"]],
    ["a separator right at the limit is used", "x".repeat(20) + " tail", 20, ["x".repeat(20), "tail"]],
    ["a surrogate pair at a hard cut moves whole to the next part", "abcd\u{1F600}efgh", 5, ["abcd", "\u{1F600}efg", "h"]],
    ["a separator that would leave only whitespace before it is not a cut", "   \n" + "x".repeat(20), 10, ["   \nxxxxxx", "x".repeat(10), "xxxx"]],
    // The pairs at the edges of the surrogate ranges move whole; a lone half is an ordinary unit.
    ["the lowest high and low surrogates are a pair", "abcd\ud800\udc00ef", 5, ["abcd", "\ud800\udc00ef"]],
    ["the highest high and low surrogates are a pair", "abcd\udbff\udfffef", 5, ["abcd", "\udbff\udfffef"]],
    ["a lone low surrogate after an ordinary character is cut before like any unit", "abcde\udc00fgh", 5, ["abcde", "\udc00fgh"]],
    ["a lone high surrogate before an ordinary character is cut after like any unit", "abcd\ud800efgh", 5, ["abcd\ud800", "efgh"]],
    ["a character just past the surrogates is no half of a pair", "abcd\ue000\udc00fg", 5, ["abcd\ue000", "\udc00fg"]],
    ["nor is one just past the low surrogates", "abcd\ud800\ue000fg", 5, ["abcd\ud800", "\ue000fg"]],
  ])("%s", (_name, text, limit, expected) => {
    expect(splitMessage(text, limit)).toEqual(expected);
  });

  it("uses Telegram's 4,096-character limit by default", () => {
    const text = Array.from({ length: 600 }, (_, i) => `Sentence ${String(i).padStart(3, "0")}.`).join(" ");
    const parts = splitMessage(text);
    expect(text.length).toBeGreaterThan(TELEGRAM_MAX_MESSAGE_CHARS * 2);
    expect(parts).toHaveLength(3);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(4_096);
      // Cut at sentence ends: every part is whole sentences.
      expect(part).toMatch(/^Sentence \d{3}\.(?: Sentence \d{3}\.)*$/);
    }
    expect(parts.join(" ")).toBe(text);
  });

  it.each([0, 1, 2.5, Number.NaN])("refuses a limit of %s", (limit) => {
    expect(() => splitMessage("text", limit)).toThrow(RangeError);
  });
});

/** Text over an alphabet dense in every kind of boundary, with astral characters to cut around. */
const anyText = fc.string({
  unit: fc.constantFrom("a", "b", "Z", "7", " ", " ", "\n", "\t", ".", "!", "?", ",", "é", "\u{1F600}", "\u{1D11E}", "\u00A0"),
  maxLength: 300,
});
const anyLimit = fc.integer({ min: 2, max: 40 });

describe("splitMessage: properties", () => {
  it("every part is non-blank and within the limit", () => {
    fc.assert(
      fc.property(anyText, anyLimit, (text, limit) => {
        for (const part of splitMessage(text, limit)) {
          expect(part.trim()).not.toBe("");
          expect(part.length).toBeLessThanOrEqual(limit);
        }
      }),
    );
  });

  it("loses, duplicates and reorders no non-whitespace character", () => {
    fc.assert(
      fc.property(anyText, anyLimit, (text, limit) => {
        const parts = splitMessage(text, limit);
        expect(nonWhitespace(parts.join(""))).toBe(nonWhitespace(text));
        expectPartsInOrder(text, parts);
      }),
    );
  });

  it("never splits a surrogate pair", () => {
    fc.assert(
      fc.property(anyText, anyLimit, (text, limit) => {
        for (const part of splitMessage(text, limit)) {
          expect(part.isWellFormed()).toBe(true);
        }
      }),
    );
  });

  it("returns a text that fits as is", () => {
    fc.assert(
      fc.property(anyText, anyLimit, (text, limit) => {
        fc.pre(text.length <= limit && text.trim() !== "");
        expect(splitMessage(text, limit)).toEqual([text]);
      }),
    );
  });

  it("never cuts inside a word when every word fits", () => {
    const limit = 30;
    const word = fc.string({ unit: fc.constantFrom("a", "b", "c", ".", "!", "?", "\u{1F600}"), minLength: 1, maxLength: 14 });
    const separator = fc.constantFrom(" ", " ", "\n", "\n\n");
    const text = fc
      .tuple(word, fc.array(fc.tuple(separator, word), { maxLength: 60 }))
      .map(([first, rest]) => first + rest.map(([sep, w]) => sep + w).join(""));
    fc.assert(
      fc.property(text, (value) => {
        const parts = splitMessage(value, limit);
        expect(parts.flatMap(words)).toEqual(words(value));
      }),
    );
  });
});
