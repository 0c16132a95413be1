import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitLines } from "../../src/core/line-breaks";
import { renderEnvelope } from "../../src/core/render";
import { dataResult, errorResult } from "../../src/mcp/results";

/**
 * What an MCP tool answers (src/mcp/results.ts): the operation's value as one line of JSON inside
 * the memory envelope, whatever text from history it holds, and a refusal as the REST error body.
 */

const FRAME = "untrusted-history-summary";

/** Text built from what could break a frame or a line, mixed with arbitrary characters. */
const hostileText: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      fc.constantFrom(`</${FRAME}>`, `<${FRAME} kind="boundary">`, "&lt;", "&amp;", "<", ">", "&", '"', "\\", "\n", "\r\n", "\u000B", "\u000C", "\u001C", "\u0085", "\u2028", "\u2029", "SYSTEM: "),
      fc.string({ unit: "binary", maxLength: 8 }),
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join(""));

const textOf = (result: ReturnType<typeof dataResult>): string => result.content[0]?.text ?? "";

/** The envelope's body line, unescaped in one pass, parsed. */
function decoded(text: string): unknown {
  const lines = text.split("\n");
  return JSON.parse((lines[3] ?? "").replace(/&(amp|lt|gt);/g, (_, name: string) => (name === "amp" ? "&" : name === "lt" ? "<" : ">")));
}

describe("dataResult", () => {
  it("is the memory envelope around the value's JSON", () => {
    const value = { turns: [{ text: "Lisbon, in May." }], nextAfter: null };
    expect(dataResult(value)).toEqual({ content: [{ type: "text", text: renderEnvelope("memory", JSON.stringify(value)).content }] });
  });

  it("keeps any text inside one body line of one frame, and gives it back whole", () => {
    fc.assert(
      fc.property(hostileText, fc.string({ unit: "grapheme", maxLength: 40 }), (text, other) => {
        const value = { results: [{ content: text, sources: [{ messageId: other, seq: 3 }] }] };
        const answer = textOf(dataResult(value));
        // Five lines whichever break a reader honours: the frame's opening, the notice, a blank line, the body, the close.
        const lines = splitLines(answer);
        expect(lines).toHaveLength(5);
        expect(lines[0]).toBe(`<${FRAME} kind="memory">`);
        expect(lines[4]).toBe(`</${FRAME}>`);
        expect(lines[3]).not.toMatch(/[<>]/);
        expect(decoded(answer)).toEqual(value);
      }),
      { numRuns: 300 },
    );
  });

  it("escapes the line breaks JSON leaves in a string", () => {
    const body = textOf(dataResult({ text: "a\u2028b\u2029c\u0085d" })).split("\n")[3];
    expect(body).toBe('{"text":"a\\u2028b\\u2029c\\u0085d"}');
  });
});

describe("errorResult", () => {
  it("is the REST error body, typed by its code, as text and as structured content", () => {
    const result = errorResult({ code: "validation_failed", message: "limit: too big", details: { issues: [{ path: "limit", message: "too big" }] } });
    const body = { error: { issues: [{ path: "limit", message: "too big" }], code: "validation_failed", message: "limit: too big" } };
    expect(result).toEqual({ content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body, isError: true });
  });

  it("lets no detail overwrite the code or the message", () => {
    const result = errorResult({ code: "forbidden", message: "no", details: { code: "other", message: "yes" } });
    expect(result.structuredContent).toEqual({ error: { code: "forbidden", message: "no" } });
  });
});
