import { describe, expect, it } from "vitest";
import type { CompactorOutputFailureCode } from "../../src/core/compactor-output";
import fc from "fast-check";
import {
  NO_SUBSTANTIVE_CONTENT,
  PROJECTION_JSON_SCHEMA,
  derivePreview,
  looksLikeRefusal,
  renderBoundaryBody,
  structuredProjectionSchema,
  unrecalledMemoryRefs,
  validateCompactorOutput,
} from "../../src/core/compactor-output";
import type { CompactionContent, Packet } from "../../src/core/packet";
import { OUTPUT_CONTRACT } from "../../src/core/packet";
import { renderEnvelope } from "../../src/core/render";
import { memoryPage, packetFixture } from "../support/packet-fixture";

const PAGES = [
  memoryPage("decisions/invoice-vendor.md", "Vendor B chosen for invoicing (compliance). @ada decided, @bob preferred vendor A on price."),
  memoryPage("people/bob.md", "Bob drafts contracts and works from the Paris office."),
];

/** Limits generous enough that only the case under test can fail. */
const projection = (overrides: Parameters<typeof packetFixture>[0] = {}): Packet =>
  packetFixture({ memoryPages: PAGES, policy: { maxSummaryChars: 2_000 }, sizes: { replacedChars: 50_000 }, ...overrides });
const plain = (overrides: Parameters<typeof packetFixture>[0] = {}): Packet =>
  packetFixture({ outputMode: "plain", policy: { maxSummaryChars: 2_000 }, sizes: { replacedChars: 50_000 }, ...overrides });

const json = (value: unknown): string => JSON.stringify(value);
const GOOD = json({
  summary: "Invoice vendor settled, see memory:decisions/invoice-vendor.md.\n@bob owes the contract draft.",
  salientFacts: {
    memoryRefs: [{ path: "decisions/invoice-vendor.md", note: "vendor B; @ada decided, @bob dissented" }],
    openThreads: ["@bob asked whether the contract covers Berlin"],
  },
});

const stop = (text: string): { text: string; finishReason: string | null } => ({ text, finishReason: "stop" });

function codeOf(packet: Packet, text: string, finishReason: string | null = "stop"): CompactorOutputFailureCode | "ok" {
  const result = validateCompactorOutput(packet, { text, finishReason });
  return result.ok ? "ok" : result.error.code;
}

describe("validateCompactorOutput: failures", () => {
  const cases: readonly [string, () => Packet, string, string | null, CompactorOutputFailureCode][] = [
    ["a reply cut at the token limit, even if it parses", projection, GOOD, "length", "truncated_output"],
    ["a plain reply cut at the token limit", plain, "@ada chose vendor B and", "length", "truncated_output"],
    ["no text", projection, "", "stop", "empty_output"],
    ["only whitespace", plain, "  \n\t ", "stop", "empty_output"],
    ["no text and no finish reason", plain, "", null, "empty_output"],
    ["an apology", plain, "I'm sorry, but I can't help with that request.", "stop", "refusal"],
    ["a typographic apology", plain, "I’m sorry — this is not something I can summarize.", "stop", "refusal"],
    ["I can't", projection, "I can't summarize this conversation.", "stop", "refusal"],
    ["I cannot", plain, "I cannot continue with this.", "stop", "refusal"],
    ["an AI disclaimer", plain, "As an AI language model, I do not have access to the history.", "stop", "refusal"],
    ["a gateway error as content", projection, "Error: upstream connect timeout", "stop", "refusal"],
    ["a quoted apology", plain, '"I apologize, but I must decline."', "stop", "refusal"],
    ["unable, in the first sentence", plain, "Unfortunately I am unable to process this request. Please retry.", "stop", "refusal"],
    ["a refusal wrapped in the JSON shape", projection, json({ summary: "I'm sorry, I can't summarize this.", salientFacts: {} }), "stop", "refusal"],
    ["the content filter", plain, "@ada said something", "content_filter", "refusal"],
    ["two code fences", projection, "```json\n" + GOOD + "\n```\n```json\n" + GOOD + "\n```", "stop", "invalid_json"],
    ["a code fence with prose before it", projection, "Here it is:\n```json\n" + GOOD + "\n```", "stop", "invalid_json"],
    ["an unclosed code fence", projection, "```json\n" + GOOD, "stop", "invalid_json"],
    ["prose before the object", projection, "Here is the projection: " + GOOD, "stop", "invalid_json"],
    ["prose after the object", projection, GOOD + "\nHope this helps.", "stop", "invalid_json"],
    ["two objects", projection, GOOD + GOOD, "stop", "invalid_json"],
    ["broken JSON", projection, '{"summary": "x", salientFacts: {}}', "stop", "invalid_json"],
    ["an array", projection, "[" + GOOD + "]", "stop", "invalid_json"],
    ["plain text in projection mode", projection, "@ada chose vendor B.", "stop", "invalid_json"],
    ["no salientFacts", projection, json({ summary: "@ada chose vendor B." }), "stop", "invalid_shape"],
    ["an empty summary", projection, json({ summary: "", salientFacts: {} }), "stop", "invalid_shape"],
    ["a blank summary", projection, json({ summary: "  \n ", salientFacts: {} }), "stop", "invalid_shape"],
    ["a summary that is not a string", projection, json({ summary: 42, salientFacts: {} }), "stop", "invalid_shape"],
    ["an extra top-level field", projection, json({ summary: "s", salientFacts: {}, confidence: 0.9 }), "stop", "invalid_shape"],
    ["a durable-fact field seed 001 forbids", projection, json({ summary: "s", salientFacts: { decisions: ["vendor B"] } }), "stop", "invalid_shape"],
    ["a null list", projection, json({ summary: "s", salientFacts: { openThreads: null } }), "stop", "invalid_shape"],
    ["a list that is a string", projection, json({ summary: "s", salientFacts: { openThreads: "none" } }), "stop", "invalid_shape"],
    ["a memory ref without a note", projection, json({ summary: "s", salientFacts: { memoryRefs: [{ path: "people/bob.md" }] } }), "stop", "invalid_shape"],
    ["a memory ref with an extra field", projection, json({ summary: "s", salientFacts: { memoryRefs: [{ path: "people/bob.md", note: "n", score: 1 }] } }), "stop", "invalid_shape"],
    ["51 open threads", projection, json({ summary: "s", salientFacts: { openThreads: Array.from({ length: 51 }, (_, i) => `thread ${i}`) } }), "stop", "invalid_shape"],
    ["a 501-character item", projection, json({ summary: "s", salientFacts: { abandonedDirections: ["x".repeat(501)] } }), "stop", "invalid_shape"],
    ["an empty item", projection, json({ summary: "s", salientFacts: { openThreads: [" "] } }), "stop", "invalid_shape"],
    ["a projection summary one over the limit", () => projection({ policy: { maxSummaryChars: 100 } }), json({ summary: "a".repeat(101), salientFacts: {} }), "stop", "output_too_long"],
    ["a plain summary one over the limit", () => plain({ policy: { maxSummaryChars: 100 } }), "b".repeat(101), "stop", "output_too_long"],
    ["a summary as large as what it replaces", () => plain({ sizes: { replacedChars: 300 } }), "@ada chose vendor B. ".repeat(20), "stop", "not_smaller"],
  ];

  it.each(cases)("rejects %s", (_name, packet, text, finishReason, code) => {
    expect(codeOf(packet(), text, finishReason)).toBe(code);
  });

  it("explains each failure in its message", () => {
    const result = validateCompactorOutput(projection({ policy: { maxSummaryChars: 100 } }), stop(json({ summary: "a".repeat(101), salientFacts: {} })));
    expect(result).toMatchObject({ ok: false, error: { code: "output_too_long", message: expect.stringContaining("101") } });
  });

  const NOT_ONE_OBJECT = "the reply is not a single JSON object (prose around it, or more than one code fence)";
  it.each<[string, Packet, string, string | null, string | RegExp]>([
    ["a reply cut at the token limit", projection(), GOOD, "length", "the model stopped at its output token limit"],
    ["no text", plain(), " ", "stop", "the model returned no text"],
    ["the content filter", plain(), "@ada said something", "content_filter", "the provider's content filter stopped the reply"],
    ["an apology", plain(), "I'm sorry, but I can't help with that request.", "stop", "the reply is a refusal or an error message, not a summary"],
    ["an apology in the summary", projection(), json({ summary: "I'm sorry, I can't summarize this.", salientFacts: {} }), "stop", "the summary is a refusal or an error message, not a summary"],
    ["prose before the object", projection(), "Here is the projection: " + GOOD, "stop", NOT_ONE_OBJECT],
    ["prose after the object", projection(), GOOD + "\nHope this helps.", "stop", NOT_ONE_OBJECT],
    ["broken JSON", projection(), '{"summary": "x", salientFacts: {}}', "stop", /^the reply is not valid JSON: \S/],
    ["a field of the wrong type", projection(), json({ summary: "s", salientFacts: { openThreads: "none" } }), "stop", "the reply does not have the projection shape at salientFacts.openThreads: Invalid input: expected array, received string"],
    ["an extra top-level field", projection(), json({ summary: "s", salientFacts: {}, confidence: 0.9 }), "stop", 'the reply does not have the projection shape: Unrecognized key: "confidence"'],
    ["a summary over the limit", plain({ policy: { maxSummaryChars: 100 } }), "b".repeat(101), "stop", "the summary has 101 characters; the policy allows 100"],
    ["a summary as large as what it replaces", plain({ sizes: { replacedChars: 300 } }), "@ada chose vendor B. ".repeat(20), "stop", /^the boundary would take \d+ characters, not fewer than the 300 it replaces$/],
  ])("says what was wrong with %s", (_name, packet, text, finishReason, message) => {
    const result = validateCompactorOutput(packet, { text, finishReason });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    if (typeof message === "string") expect(result.error.message).toBe(message);
    else expect(result.error.message).toMatch(message);
  });

  it("judges text that opens like a JSON object by the JSON rules, not as a refusal", () => {
    expect(codeOf(projection(), "{I am unable to summarize this.}")).toBe("invalid_json");
  });
});

describe("validateCompactorOutput: harmless formatting", () => {
  it.each([
    ["```json", "```json\n" + GOOD + "\n```"],
    ["a bare fence", "```\n" + GOOD + "\n```"],
    ["a fence with spaces around", "  ```JSON \n" + GOOD + "\n```  \n"],
    ["an indented object", "```json\n  " + GOOD + "  \n```"],
  ])("accepts one surrounding code fence (%s) and reads the object inside", (_name, text) => {
    expect(validateCompactorOutput(projection(), stop(text))).toEqual(validateCompactorOutput(projection(), stop(GOOD)));
  });

  it("accepts a plain summary inside one fence as the text inside", () => {
    expect(validateCompactorOutput(plain(), stop("```\n@ada chose vendor B.\n```"))).toMatchObject({ ok: true, value: { summary: "@ada chose vendor B." } });
  });

  const refs = (...paths: string[]) => json({ summary: "@ada chose vendor B.", salientFacts: { memoryRefs: paths.map((path) => ({ path, note: `about ${path}` })) } });

  it("keeps a reference to a page that exists though it was not recalled this run", () => {
    const result = validateCompactorOutput(projection(), stop(refs("people/bob.md", "people/carla.md")), new Set(["people/carla.md"]));
    expect(result).toMatchObject({ ok: true, value: { salientFacts: { memoryRefs: [{ path: "people/bob.md" }, { path: "people/carla.md" }] }, degraded: false } });
    expect(result.ok && result.value.droppedMemoryRefs).toBeUndefined();
  });

  it("drops a reference to a page that does not exist, with a note, instead of failing the run", () => {
    const result = validateCompactorOutput(projection(), stop(refs("people/bob.md", "decisions/other.md", "People/Bob.md")));
    expect(result).toMatchObject({
      ok: true,
      value: {
        salientFacts: { memoryRefs: [{ path: "people/bob.md", note: "about people/bob.md" }] },
        droppedMemoryRefs: [
          { path: "decisions/other.md", note: "no such memory page" },
          { path: "People/Bob.md", note: "no such memory page" },
        ],
      },
    });
    expect(result.ok && renderBoundaryBody(result.value)).not.toContain("decisions/other.md");
  });

  it("is degraded when every reference was dropped", () => {
    const result = validateCompactorOutput(projection({ memoryPages: [] }), stop(refs("people/nobody.md")));
    expect(result).toMatchObject({ ok: true, value: { salientFacts: { memoryRefs: [] }, degraded: true } });
  });

  it("lists the paths a reply names that the packet did not recall, for the caller to look up", () => {
    expect(unrecalledMemoryRefs(projection(), refs("people/bob.md", "people/carla.md", "x.md"))).toEqual(["people/carla.md", "x.md"]);
    expect(unrecalledMemoryRefs(projection(), "```json\n" + refs("people/carla.md") + "\n```")).toEqual(["people/carla.md"]);
    expect(unrecalledMemoryRefs(projection(), "\n  ```json\n" + refs("people/carla.md") + "\n```\n")).toEqual(["people/carla.md"]);
    expect(unrecalledMemoryRefs(projection(), json({ summary: "@ada chose vendor B.", salientFacts: {} }))).toEqual([]);
    expect(unrecalledMemoryRefs(projection(), "not json")).toEqual([]);
    expect(unrecalledMemoryRefs(plain(), refs("people/carla.md"))).toEqual([]);
  });

  it("property: whatever the structured-output schema admits, the validator accepts", () => {
    const item = fc.string({ minLength: 1, maxLength: 40 }).filter((t) => t.trim() !== "");
    const path = fc.constantFrom(...PAGES.map((p) => p.path));
    fc.assert(
      fc.property(
        fc.record({
          summary: fc.string({ minLength: 1, maxLength: 200 }).filter((t) => t.trim() !== "" && !looksLikeRefusal(t)),
          salientFacts: fc.record({
            memoryRefs: fc.array(fc.record({ path, note: fc.string({ maxLength: 60 }) }), { maxLength: 3 }),
            openThreads: fc.array(item, { maxLength: 3 }),
            abandonedDirections: fc.array(item, { maxLength: 3 }),
          }),
        }),
        (value) => {
          expect(structuredProjectionSchema.safeParse(value).success).toBe(true);
          expect(codeOf(projection(), json(value))).toBe("ok");
        },
      ),
      { numRuns: 100 },
    );
  });

  it("asks providers for a strict JSON schema: every field required, nothing else allowed", () => {
    expect(PROJECTION_JSON_SCHEMA).toMatchObject({
      type: "object",
      required: ["summary", "salientFacts"],
      additionalProperties: false,
      properties: {
        salientFacts: {
          type: "object",
          required: ["memoryRefs", "openThreads", "abandonedDirections"],
          additionalProperties: false,
          properties: { memoryRefs: { type: "array", items: { type: "object", required: ["path", "note"], additionalProperties: false } } },
        },
      },
    });
    expect(PROJECTION_JSON_SCHEMA).not.toHaveProperty("$schema");
  });
});

describe("validateCompactorOutput: projection success", () => {
  it("wraps the model's object in the output contract", () => {
    const result = validateCompactorOutput(projection(), stop(`  ${GOOD}\n`));
    expect(result).toStrictEqual({
      ok: true,
      value: {
        contract: OUTPUT_CONTRACT,
        mode: "projection",
        summary: "Invoice vendor settled, see memory:decisions/invoice-vendor.md.\n@bob owes the contract draft.",
        preview: "Invoice vendor settled, see memory:decisions/invoice-vendor.md.",
        salientFacts: {
          memoryRefs: [{ path: "decisions/invoice-vendor.md", note: "vendor B; @ada decided, @bob dissented" }],
          openThreads: ["@bob asked whether the contract covers Berlin"],
          abandonedDirections: [],
        },
        degraded: false,
      },
    });
  });

  it("accepts seed 001's pure-noise answer, not degraded", () => {
    const result = validateCompactorOutput(projection({ memoryPages: [] }), stop(json({ summary: NO_SUBSTANTIVE_CONTENT, salientFacts: {} })));
    expect(result).toMatchObject({ ok: true, value: { summary: NO_SUBSTANTIVE_CONTENT, degraded: false, salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] } } });
    // No reference proposed, none dropped.
    expect(result.ok && result.value).not.toHaveProperty("droppedMemoryRefs");
  });

  it("accepts a quoted first-person sentence that is history, not a refusal", () => {
    const text = json({ summary: "@ada: I am unable to attend Tuesday, so @bob presents.", salientFacts: {} });
    expect(codeOf(projection(), text)).toBe("ok");
  });

  it("accepts a summary of exactly maxSummaryChars", () => {
    expect(codeOf(projection({ policy: { maxSummaryChars: 100 } }), json({ summary: "a".repeat(100), salientFacts: {} }))).toBe("ok");
  });

  it.each([
    ["no page was recalled", [] as Packet["memoryPages"], json({ summary: "@ada chose vendor B for invoicing.", salientFacts: {} }), true],
    ["pages were recalled but none matched", PAGES, json({ summary: "@ada chose vendor B for invoicing.", salientFacts: { openThreads: ["Berlin?"] } }), true],
    ["a page matched", PAGES, GOOD, false],
    ["the slice was pure noise, with pages", PAGES, json({ summary: NO_SUBSTANTIVE_CONTENT, salientFacts: {} }), false],
    ["the slice was pure noise, without pages", [] as Packet["memoryPages"], json({ summary: NO_SUBSTANTIVE_CONTENT, salientFacts: {} }), false],
  ] as const)("degraded when %s: %s", (_name, pages, text, degraded) => {
    const result = validateCompactorOutput(projection({ memoryPages: [...pages] }), stop(text));
    expect(result.ok && result.value.degraded).toBe(degraded);
  });
});

describe("validateCompactorOutput: plain success", () => {
  it("takes the trimmed text as the summary, with empty lists and no degradation", () => {
    const result = validateCompactorOutput(plain(), stop("\n  @ada chose vendor B for invoicing.\n@bob drafts the contract.  \n"));
    expect(result).toEqual({
      ok: true,
      value: {
        contract: OUTPUT_CONTRACT,
        mode: "plain",
        summary: "@ada chose vendor B for invoicing.\n@bob drafts the contract.",
        preview: "@ada chose vendor B for invoicing.",
        salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] },
        degraded: false,
      },
    });
  });

  it("treats JSON-looking text as text in plain mode", () => {
    const result = validateCompactorOutput(plain(), stop('{"summary": "x"}'));
    expect(result.ok && result.value.summary).toBe('{"summary": "x"}');
  });

  it("accepts a participant's quoted inability", () => {
    expect(codeOf(plain(), "@ada: I am unable to attend Tuesday, so @bob presents.")).toBe("ok");
  });

  it("accepts a finish reason the provider did not report", () => {
    expect(codeOf(plain(), "@ada chose vendor B.", null)).toBe("ok");
  });
});

describe("not_smaller: the boundary must be strictly smaller than what it replaces", () => {
  const text = "@ada chose vendor B for invoicing; @bob drafts the contract.";
  const boundaryChars = (packet: Packet): number => {
    const result = validateCompactorOutput(packet, stop(text));
    if (!result.ok) throw new Error(result.error.message);
    return renderEnvelope("boundary", renderBoundaryBody(result.value)).content.length;
  };
  const size = boundaryChars(plain());

  it("counts the exact envelope the agent will be sent", () => {
    expect(size).toBe(renderEnvelope("boundary", text).content.length);
  });

  it("rejects a boundary exactly as large as the replaced characters", () => {
    expect(codeOf(plain({ sizes: { replacedChars: size } }), text)).toBe("not_smaller");
  });

  it("accepts a boundary one character smaller", () => {
    expect(codeOf(plain({ sizes: { replacedChars: size + 1 } }), text)).toBe("ok");
  });

  it("counts the lists and the escaping too", () => {
    const withLists = json({ summary: "a < b & c", salientFacts: { openThreads: ["is x > y?"] } });
    const result = validateCompactorOutput(projection(), stop(withLists));
    if (!result.ok) throw new Error(result.error.message);
    const exact = renderEnvelope("boundary", renderBoundaryBody(result.value)).content.length;
    expect(exact).toBeGreaterThan(renderEnvelope("boundary", "a < b & c").content.length + "is x > y?".length);
    expect(codeOf(projection({ sizes: { replacedChars: exact } }), withLists)).toBe("not_smaller");
    expect(codeOf(projection({ sizes: { replacedChars: exact + 1 } }), withLists)).toBe("ok");
  });
});

describe("derivePreview", () => {
  it("is the first line", () => {
    expect(derivePreview("First line.\nSecond line.")).toBe("First line.");
  });

  it("keeps a first line of exactly 280 characters whole", () => {
    const line = "x".repeat(280);
    expect(derivePreview(`${line}\nmore`)).toBe(line);
  });

  it("cuts a long first line at a word boundary and marks the cut", () => {
    const line = Array.from({ length: 80 }, (_, i) => `word${i}`).join(" ");
    const preview = derivePreview(line);
    expect(preview.length).toBeLessThanOrEqual(280);
    expect(preview.endsWith("…")).toBe(true);
    const kept = preview.slice(0, -1);
    expect(line.startsWith(kept)).toBe(true);
    // The cut falls between words: what follows the kept text in the line is a space.
    expect(line[kept.length]).toBe(" ");
  });

  it("cuts at the last word boundary that fits, without the spaces before it", () => {
    const line = `${"a".repeat(100)} ${"b".repeat(100)}  ${"c".repeat(100)}`;
    expect(derivePreview(line)).toBe(`${"a".repeat(100)} ${"b".repeat(100)}…`);
  });

  it("is the first line that holds text, without the spaces around it", () => {
    expect(derivePreview("\n\n  First line.  \nSecond line.")).toBe("First line.");
    expect(derivePreview("First line.   \nSecond line.")).toBe("First line.");
  });

  it("hard-cuts a single word longer than the preview", () => {
    const preview = derivePreview("y".repeat(400));
    expect(preview).toBe(`${"y".repeat(279)}…`);
  });

  it("is what validation puts in the content", () => {
    const summary = `${"long ".repeat(70)}end\nsecond`;
    const result = validateCompactorOutput(plain(), stop(summary));
    expect(result.ok && result.value.preview).toBe(derivePreview(summary.trim()));
    expect(result.ok && result.value.preview.length).toBeLessThanOrEqual(280);
  });
});

describe("renderBoundaryBody", () => {
  const content: CompactionContent = {
    contract: OUTPUT_CONTRACT,
    mode: "projection",
    summary: "Vendor settled.\n@bob drafts.",
    preview: "Vendor settled.",
    salientFacts: {
      memoryRefs: [
        { path: "decisions/invoice-vendor.md", note: "vendor B; @ada decided" },
        { path: "people/bob.md", note: "" },
      ],
      openThreads: ["Berlin office\nin scope?"],
      abandonedDirections: ["vendor A (review pending)"],
    },
    degraded: false,
  };

  it("renders the summary, then each non-empty list under its heading", () => {
    expect(renderBoundaryBody(content)).toBe(
      [
        "Vendor settled.",
        "@bob drafts.",
        "",
        "Memory:",
        "- memory:decisions/invoice-vendor.md — vendor B; @ada decided",
        "- memory:people/bob.md",
        "",
        "Open threads:",
        "- Berlin office in scope?",
        "",
        "Abandoned directions:",
        "- vendor A (review pending)",
      ].join("\n"),
    );
  });

  it("lists a memory reference by its trimmed note, and by its path alone when the note is blank", () => {
    const refs = { ...content, summary: "s", salientFacts: { memoryRefs: [{ path: "a.md", note: "  vendor B  " }, { path: "b.md", note: " \n " }], openThreads: [], abandonedDirections: [] } };
    expect(renderBoundaryBody(refs)).toBe("s\n\nMemory:\n- memory:a.md — vendor B\n- memory:b.md");
  });

  it("is only the summary when every list is empty", () => {
    const bare = { ...content, salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] } };
    expect(renderBoundaryBody(bare)).toBe("Vendor settled.\n@bob drafts.");
  });

  it("is deterministic", () => {
    expect(renderBoundaryBody(structuredClone(content))).toBe(renderBoundaryBody(content));
  });
});

describe("looksLikeRefusal", () => {
  it.each([
    ["Sorry, but I can't do that.", true],
    ["**I'm sorry**, I cannot help.", true],
    ["> As a language model I cannot browse.", true],
    ["The team is fine. I am unable to say more.", false],
    ["@ada: I am unable to attend.", false],
    ["Ada said: I'm unable to attend.", false],
    ["Vendor B chosen; I cannot wait was Ada's reply.", false],
    ["Unfortunately I am unable to process this: the input was empty.", true],
  ] as const)("%s → %s", (text, expected) => {
    expect(looksLikeRefusal(text)).toBe(expected);
  });
});
