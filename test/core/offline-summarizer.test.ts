import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NO_SUBSTANTIVE_CONTENT, renderBoundaryBody, validateCompactorOutput } from "../../src/core/compactor-output";
import type { Amendment, CompactionContent, Packet } from "../../src/core/packet";
import { OFFLINE_COMPACTOR, offlineCompaction, summaryBudget } from "../../src/core/offline-summarizer";
import { renderEnvelope } from "../../src/core/render";
import type { TurnSpec } from "../support/packet-fixture";
import { ADA, BOB, memoryPage, packetFixture, previousBoundary } from "../support/packet-fixture";

const VENDOR_PAGE = memoryPage("decisions/invoice-vendor.md", "Invoice vendor: vendor B, chosen for compliance. Ada decided; Bob preferred vendor A on price.");
const GARDEN_PAGE = memoryPage("hobbies/garden.md", "Tomatoes grow best with morning sun and weekly watering.");

function validated(packet: Packet): CompactionContent {
  const result = validateCompactorOutput(packet, { text: offlineCompaction(packet), finishReason: null });
  if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
  return result.value;
}

describe("offlineCompaction", () => {
  it("names itself as what it is, not as a language model", () => {
    expect(OFFLINE_COMPACTOR).toEqual({ provider: "foldline-extractive", model: "foldline-extractive-1" });
  });

  it("returns the seed-001 JSON shape that the validator accepts", () => {
    const packet = packetFixture({ memoryPages: [VENDOR_PAGE] });
    const parsed: unknown = JSON.parse(offlineCompaction(packet));
    expect(parsed).toMatchObject({ summary: expect.any(String), salientFacts: expect.any(Object) });
    const content = validated(packet);
    const lines = content.summary.split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.length).toBeLessThanOrEqual(8);
    // Every line names the turn it came from and is attributed to its speaker.
    for (const line of lines) expect(line).toMatch(/^\[[sp]\d+\] @(ada|bob|helper): /);
  });

  it("keeps the chosen lines in chronological order", () => {
    const packet = packetFixture();
    const lines = validated(packet).summary.split("\n");
    const positions = lines.map((line) => {
      const sentence = line.replace(/^\[[sp]\d+\] @\w+: /, "").replace(/…$/, "");
      return packet.frozen.turns.findIndex((t) => t.text.includes(sentence));
    });
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it("drops chatter: a greeting or an emoji acknowledgement is never a line", () => {
    const summary = validated(packetFixture()).summary;
    expect(summary).not.toContain("Morning all");
    expect(summary).not.toContain("👍");
  });

  it("points at a recalled page that shares the slice's vocabulary, and not at one that does not", () => {
    const content = validated(packetFixture({ memoryPages: [GARDEN_PAGE, VENDOR_PAGE] }));
    expect(content.salientFacts.memoryRefs.map((r) => r.path)).toEqual(["decisions/invoice-vendor.md"]);
    expect(content.salientFacts.memoryRefs[0]?.note).toMatch(/vendor/);
    expect(content.degraded).toBe(false);
  });

  it("points only at a page a reference can name: a path neither empty nor over 200 characters", () => {
    const at = (path: string) => memoryPage(path, VENDOR_PAGE.content);
    const refs = (pages: Packet["memoryPages"]) => validated(packetFixture({ memoryPages: pages })).salientFacts.memoryRefs.map((r) => r.path);
    expect(refs([at(`${"d".repeat(197)}.md`)])).toEqual([`${"d".repeat(197)}.md`]);
    expect(refs([at(""), at(`${"d".repeat(198)}.md`)])).toEqual([]);
  });

  it("is degraded when no page was recalled", () => {
    const content = validated(packetFixture({ memoryPages: [] }));
    expect(content.salientFacts.memoryRefs).toEqual([]);
    expect(content.degraded).toBe(true);
  });

  it("lists the unanswered question as an open thread, not the answered one", () => {
    const threads = validated(packetFixture()).salientFacts.openThreads;
    expect(threads).toEqual(["@bob asked: Should the contract cover the Berlin office too, or only the Paris team for now?"]);
  });

  it("starts with the previous boundary's first line, so the chain stays connected", () => {
    const previous = previousBoundary("Earlier: @ada set the Q3 budget at 40k EUR.\n@bob owns the hiring plan.");
    const content = validated(packetFixture({ previousBoundary: previous }));
    expect(content.summary.split("\n")[0]).toBe("Earlier: @ada set the Q3 budget at 40k EUR.");
  });

  it("carries the previous boundary's other lines forward when they still rank, so older facts survive a chain of runs", () => {
    const previous = previousBoundary("Earlier: @ada set the Q3 budget at 40k EUR.\n@carol: the contract for the Berlin office is signed by Paris.\nOpen: @dan asked: lunch?");
    const turns = ["Is the Berlin contract ready for the office move?", { text: "The Berlin contract goes out on Monday.", author: BOB }];
    const lines = validated(packetFixture({ turns, previousBoundary: previous, sizes: { replacedChars: 5_000 } })).summary.split("\n");
    expect(lines[0]).toBe("Earlier: @ada set the Q3 budget at 40k EUR.");
    expect(lines).toContain("@carol: the contract for the Berlin office is signed by Paris.");
    // Open threads are recomputed from the slice, never carried; "Earlier:" is never nested.
    expect(lines.some((line) => line.includes("lunch"))).toBe(false);
    expect(lines.filter((line) => line.startsWith("Earlier:"))).toHaveLength(1);
  });

  it("drops a carried line that nothing in the slice or the previous summary recurs in before a recurring one of the slice", () => {
    const previous = previousBoundary("Earlier: @ada set the Q3 budget at 40k EUR.\n@erin: aardvark zeppelin quokka.");
    const packet = packetFixture({ previousBoundary: previous, policy: { maxSummaryChars: 260 }, sizes: { replacedChars: 5_000 } });
    const summary = validated(packet).summary;
    expect(summary.startsWith("Earlier: @ada set the Q3 budget at 40k EUR.")).toBe(true);
    expect(summary).not.toContain("aardvark");
  });

  it("reduces pure noise to seed 001's answer", () => {
    // Noise is frozen only once it fills the context, so the slice is long.
    const noise = ["hi", "ok 👍", { text: "👋", author: BOB }, "lol", "yes", "?", { text: "haha ok", author: BOB }];
    const packet = packetFixture({ turns: Array.from({ length: 30 }, () => noise).flat() });
    expect(JSON.parse(offlineCompaction(packet))).toEqual({ summary: NO_SUBSTANTIVE_CONTENT, salientFacts: {} });
    expect(validated(packet)).toMatchObject({ summary: NO_SUBSTANTIVE_CONTENT, degraded: false });
  });

  it("keeps the previous boundary's line when the new slice is noise, instead of erasing the chain", () => {
    const packet = packetFixture({ turns: ["ok", "👍", "hi"], previousBoundary: previousBoundary("@ada set the Q3 budget at 40k EUR.") });
    expect(validated(packet).summary).toBe("Earlier: @ada set the Q3 budget at 40k EUR.");
  });

  it("carries the text of an amendment to covered history", () => {
    const packet = packetFixture({
      turns: ["Thanks!", "ok"],
      previousBoundary: previousBoundary("@ada set the Q3 budget at 40k EUR."),
      sizes: { replacedChars: 5_000 },
      amendments: [{ turnId: "s3", group: 3, role: "user", kind: "edited", hashBefore: "a".repeat(64), hashAfter: "c".repeat(64), text: "Correction: the Q3 budget is 45k EUR, approved by finance." }],
    });
    expect(validated(packet).summary).toContain("[s3] (edited): Correction: the Q3 budget is 45k EUR, approved by finance.");
  });

  it("writes plain text in plain mode", () => {
    const packet = packetFixture({ outputMode: "plain" });
    const text = offlineCompaction(packet);
    expect(() => JSON.parse(text) as unknown).toThrow();
    const content = validated(packet);
    expect(content.mode).toBe("plain");
    expect(content.summary).toContain("Open: @bob asked: Should the contract cover the Berlin office too");
  });

  it("is byte-identical for the same packet", () => {
    const packet = packetFixture({ memoryPages: [VENDOR_PAGE, GARDEN_PAGE] });
    expect(offlineCompaction(structuredClone(packet))).toBe(offlineCompaction(packet));
  });

  it("shrinks to a small summary limit", () => {
    const packet = packetFixture({ policy: { maxSummaryChars: 100 }, memoryPages: [VENDOR_PAGE] });
    const content = validated(packet);
    expect(content.summary.length).toBeLessThanOrEqual(100);
  });

  it("shrinks until the boundary is smaller than what it replaces", () => {
    const base = packetFixture({ memoryPages: [VENDOR_PAGE] });
    const empty = renderEnvelope("boundary", "").content.length;
    // Just enough room for the envelope's frame and a short line.
    const packet = packetFixture({ memoryPages: [VENDOR_PAGE], sizes: { replacedChars: empty + 60 } });
    const content = validated(packet);
    expect(renderEnvelope("boundary", renderBoundaryBody(content)).content.length).toBeLessThan(empty + 60);
    expect(content.summary.length).toBeLessThan(validated(base).summary.length);
  });

  it("points at each recalled page once, and at no more than 50", () => {
    const pages = Array.from({ length: 60 }, (_, i) => memoryPage(`decisions/vendor-${String(i).padStart(2, "0")}.md`, VENDOR_PAGE.content));
    const packet = packetFixture({ memoryPages: pages, policy: { maxSummaryChars: 20_000 }, sizes: { replacedChars: 500_000 } });
    const paths = validated(packet).salientFacts.memoryRefs.map((r) => r.path);
    expect(paths).toHaveLength(50);
    expect(new Set(paths).size).toBe(50);
    // In recall order: the pages recall ranked first are the ones named.
    expect(paths).toEqual(pages.slice(0, 50).map((p) => p.path));
  });

  it("keeps the newest open threads within a quarter of its budget, and as many of them as fit", () => {
    const questions: TurnSpec[] = Array.from({ length: 12 }, (_, i) => ({ text: `Should the offsite in city number ${i + 1} also include a guided tour of the harbour district?`, author: BOB }));
    const packet = packetFixture({ turns: questions, sizes: { replacedChars: 5_000 } });
    const all = questions.map((q) => `@bob asked: ${q.text}`);
    const threads = validated(packet).salientFacts.openThreads;
    const chars = (list: readonly string[]): number => "\n\nOpen threads:".length + list.reduce((n, t) => n + t.length + 3, 0);
    expect(threads.length).toBeGreaterThan(0);
    expect(threads.length).toBeLessThan(all.length);
    expect(threads).toEqual(all.slice(all.length - threads.length));
    expect(chars(threads)).toBeLessThanOrEqual(summaryBudget(packet) * 0.25);
    expect(chars(all.slice(all.length - threads.length - 1))).toBeGreaterThan(summaryBudget(packet) * 0.25);
  });

  it("grows with the slice: a long slice of distinct facts gets a longer summary than a short one, each within its budget", () => {
    const facts = (n: number): TurnSpec[] =>
      Array.from({ length: n }, (_, i): TurnSpec => ({ text: `Invoice ${1_000 + i} for client ${String.fromCharCode(65 + (i % 26))}${i} is due on day ${(i % 28) + 1} at ${100 + i * 7} EUR.`, author: i % 2 === 0 ? ADA : BOB }));
    const short = packetFixture({ turns: facts(10) });
    const long = packetFixture({ turns: facts(200) });
    const shortBody = renderBoundaryBody(validated(short));
    const longBody = renderBoundaryBody(validated(long));
    expect(shortBody.length).toBeLessThanOrEqual(summaryBudget(short));
    expect(longBody.length).toBeLessThanOrEqual(summaryBudget(long));
    expect(summaryBudget(long)).toBeGreaterThan(summaryBudget(short));
    expect(longBody.split("\n").length).toBeGreaterThan(2 * shortBody.split("\n").length);
  });
});

describe("offlineCompaction: properties", () => {
  const WORDS = ["vendor", "invoice", "contract", "Berlin", "Paris", "budget", "deploy", "review", "the", "and", "ok", "we", "should", "release", "hiring", "plan", "legal", "price", "<tag>", "&amp;", "I'm", "sorry"];
  const sentence = fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 14 }).chain((words) =>
    fc.constantFrom(".", "?", "!", "").map((end) => `${words.join(" ")}${end}`),
  );
  const text = fc.oneof(
    { weight: 4, arbitrary: fc.array(sentence, { minLength: 1, maxLength: 4 }).map((s) => s.join(" ")) },
    { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 120 }) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 60 }) },
  );
  const author = fc.constantFrom(ADA, BOB, { id: "u:eve", name: "Eve" }, { id: "u:9" });
  const turn: fc.Arbitrary<TurnSpec> = fc.record({ text, author, role: fc.constantFrom("user", "user", "assistant") });
  const page = fc.record({ path: fc.constantFrom("decisions/vendor.md", "people/bob.md", "plans/release.md", "x".repeat(201)), content: text });
  const turnId = fc.constantFrom("s1", "s2", "p3", "s4");
  /** A carried line as this compactor writes it (tagged), or as a model might (anything). */
  const carriedLine = fc.oneof(sentence, fc.tuple(turnId, fc.constantFrom("@ada", "@bob", "@ada (edited)", "(added)"), sentence).map(([id, who, s]) => `[${id}] ${who}: ${s}`));
  const amendment: fc.Arbitrary<Amendment> = fc
    .record({ turnId, kind: fc.constantFrom("edited", "deleted", "added"), text })
    .map(({ turnId: id, kind, text: t }) => ({
      turnId: id,
      group: Number(id.slice(1)),
      role: id.startsWith("s") ? "user" : "assistant",
      kind,
      hashBefore: kind === "added" ? null : "a".repeat(64),
      hashAfter: kind === "deleted" ? null : "c".repeat(64),
      text: kind === "deleted" ? null : t,
    }));
  const packetArb = fc
    .record({
      turns: fc.array(turn, { minLength: 1, maxLength: 30 }),
      pages: fc.array(page, { maxLength: 4 }),
      mode: fc.constantFrom("projection", "plain"),
      maxSummaryChars: fc.integer({ min: 100, max: 3_000 }),
      previous: fc.option(fc.array(carriedLine, { minLength: 1, maxLength: 5 }).map((s) => s.join("\n")), { nil: null }),
      amendments: fc.array(amendment, { maxLength: 4 }),
      replacedChars: fc.option(fc.integer({ min: 0, max: 5_000 }), { nil: null }),
    })
    .map(({ turns, pages, mode, maxSummaryChars, previous, amendments, replacedChars }) =>
      packetFixture({
        amendments,
        turns,
        memoryPages: pages.map((p) => memoryPage(p.path, p.content)),
        outputMode: mode,
        policy: { maxSummaryChars },
        previousBoundary: previous === null ? null : previousBoundary(previous),
        ...(replacedChars === null ? {} : { sizes: { replacedChars } }),
      }),
    );

  /** The envelope's fixed frame plus room for one short line: anything bigger is a realistic packet. */
  const REALISTIC_MIN = renderEnvelope("boundary", "").content.length + 64;

  it("passes validation for every realistic packet", () => {
    fc.assert(
      fc.property(packetArb, (packet) => {
        fc.pre(packet.sizes.replacedChars >= REALISTIC_MIN);
        const result = validateCompactorOutput(packet, { text: offlineCompaction(packet), finishReason: null });
        if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
      }),
      { numRuns: 300 },
    );
  });

  it("never exceeds the summary limit, and fails only as not_smaller when the frame itself does not fit", () => {
    fc.assert(
      fc.property(packetArb, (packet) => {
        const result = validateCompactorOutput(packet, { text: offlineCompaction(packet), finishReason: null });
        if (result.ok) {
          expect(result.value.summary.length).toBeLessThanOrEqual(packet.policy.maxSummaryChars);
        } else {
          expect(result.error.code).toBe("not_smaller");
          expect(packet.sizes.replacedChars).toBeLessThan(REALISTIC_MIN);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("never writes a body past its budget: a fixed share of what the boundary replaces, at least a floor, at most maxSummaryChars", () => {
    fc.assert(
      fc.property(packetArb, (packet) => {
        const budget = summaryBudget(packet);
        expect(budget).toBeLessThanOrEqual(packet.policy.maxSummaryChars);
        expect(budget).toBeGreaterThanOrEqual(Math.min(600, packet.policy.maxSummaryChars));
        expect(budget).toBe(Math.min(packet.policy.maxSummaryChars, Math.max(600, Math.round(packet.sizes.replacedChars * 0.12))));
        const result = validateCompactorOutput(packet, { text: offlineCompaction(packet), finishReason: null });
        if (result.ok) expect(renderBoundaryBody(result.value).length).toBeLessThanOrEqual(budget);
      }),
      { numRuns: 300 },
    );
  });

  it("is deterministic", () => {
    fc.assert(
      fc.property(packetArb, (packet) => {
        expect(offlineCompaction(structuredClone(packet))).toBe(offlineCompaction(packet));
      }),
      { numRuns: 200 },
    );
  });
});
