import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { mergeFacts } from "../../src/core/fact-merge";
import type { ExtractedFact } from "../../src/core/fact-extraction";
import { memoryManifest, packMemory, renderRecalled } from "../../src/core/recall";
import type { RecallCandidate, RecalledPageHit, RecalledTurnHit } from "../../src/core/recall-rank";
import { contentWords, entriesOf, mergeHits, rankByTerms, rankCandidates, recallTerms, restates, wordsOf } from "../../src/core/recall-rank";
import { renderEnvelope } from "../../src/core/render";

const page = (path: string, content: string, rank: number): RecalledPageHit => ({ type: "page", path, version: 1, contentHash: "0".repeat(64), content, snippet: content, rank });
const turn = (seq: number, content: string, rank: number): RecalledTurnHit => ({
  type: "turn",
  role: "user",
  messageId: `m${seq}`,
  seq,
  authorId: "u1",
  authorName: "Ada",
  content,
  snippet: content,
  rank,
});

const fact = (path: string, key: string, statement: string, seq: number): ExtractedFact => ({
  page: path,
  key,
  statement,
  sources: [{ messageId: `m${seq}`, seq, eventHash: seq.toString(16).padStart(12, "0").padEnd(64, "0") }],
});

/** An extracted page as the merge writes it, as a search hit. */
function extractedPage(path: string, facts: readonly ExtractedFact[], rank = -1): RecalledPageHit {
  return page(path, mergeFacts(path, undefined, facts).content, rank);
}

const FRAME = renderEnvelope("memory", "").content.length;

/** The packing rule stated plainly: render the envelope with each candidate that says something new, and keep it if it fits. */
function packByRendering(candidates: readonly RecallCandidate[], budget: number): RecallCandidate[] {
  const chosen: RecallCandidate[] = [];
  for (const hit of candidates) {
    if (hit.type !== "page" && chosen.some((c) => c.type !== "page" && restates(wordsOf(hit), wordsOf(c)))) continue;
    if (renderEnvelope("memory", renderRecalled([...chosen, hit])).content.length <= budget) chosen.push(hit);
  }
  return chosen;
}
const PLANS = "extracted/plans/lisbon-offsite";

describe("packMemory", () => {
  it("keeps the whole envelope within the budget, skipping a hit that does not fit for a smaller one further down", () => {
    const big = page("big", "x".repeat(500), -3);
    const small = page("small", "tiny fact", -2);
    const old = turn(4, "an old message", -1);
    const budget = FRAME + renderRecalled([small, old]).length;
    const pack = packMemory([big, small, old], budget);
    expect(pack.hits).toEqual([small, old]);
    expect(pack.envelope?.content.length).toBe(budget);
    expect(pack.envelope?.role).toBe("user");
    expect(memoryManifest(pack, budget)).toEqual({
      envelopeChars: budget,
      budgetChars: budget,
      pages: [{ path: "small", version: 1, contentHash: "0".repeat(64), chars: 9 }],
      turns: [{ turnId: "s4", messageId: "m4", seq: 4, chars: 14 }],
    });
  });

  it("serves nothing when nothing fits, and never exceeds any budget (escaping counted)", () => {
    expect(packMemory([page("a", "fact", 0)], FRAME)).toEqual({ hits: [], envelope: undefined });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ maxLength: 80 }), fc.boolean()), { maxLength: 8 }), fc.integer({ min: 0, max: 1_500 }), (items, budget) => {
        const hits: RecallCandidate[] = items.map(([text, isPage], i) => (isPage ? page(`p${i}`, text, i) : turn(i + 1, text, i)));
        const pack = packMemory(hits, budget);
        expect(pack.envelope?.content.length ?? 0).toBeLessThanOrEqual(budget);
        expect(pack.hits.length === 0).toBe(pack.envelope === undefined);
      }),
    );
  });

  it("fills the budget exactly as far as whole items allow: with entries of several pages, turns and escaping, the envelope is what was counted", () => {
    const statement = fc.string({ minLength: 1, maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, " ").trim() || "x");
    const item = fc.oneof(
      fc.record({ kind: fc.constant("entry" as const), page: fc.integer({ min: 0, max: 2 }), key: fc.constantFrom("a", "b", "c"), statement }),
      fc.record({ kind: fc.constant("turn" as const), statement }),
    );
    fc.assert(
      // Budgets at, one under and one over the size of some prefix: where a miscount shows.
      fc.property(fc.array(item, { maxLength: 10 }), fc.nat(), fc.integer({ min: -1, max: 1 }), (items, cut, delta) => {
        const candidates: RecallCandidate[] = items.flatMap((it, i): RecallCandidate[] => {
          if (it.kind === "turn") return [turn(100 + i, it.statement, 0)];
          const path = `extracted/plans/p${it.page}`;
          return entriesOf(extractedPage(path, [fact(path, it.key, it.statement, 1 + i)])).map((e) => ({ ...e, key: `${e.key}${i}` }));
        });
        const budget = Math.max(0, renderEnvelope("memory", renderRecalled(candidates.slice(0, cut % (candidates.length + 1)))).content.length + delta);
        const pack = packMemory(candidates, budget);
        const size = pack.envelope?.content.length ?? 0;
        expect(size).toBeLessThanOrEqual(budget);
        if (pack.envelope !== undefined) expect(pack.envelope).toEqual(renderEnvelope("memory", renderRecalled(pack.hits)));
        expect(pack.hits).toEqual(packByRendering(candidates, budget));
      }),
    );
  });

  it("serves a page's current statements under one header, names their keys in the manifest, and says nothing twice", () => {
    const hit = extractedPage(PLANS, [fact(PLANS, "venue", "we booked Casa Novak", 3), fact(PLANS, "date", "the offsite is on Monday 3 May", 5), fact(PLANS, "venue", "the offsite is now at Villa Sato", 9)]);
    const [date, venue] = entriesOf(hit);
    if (date === undefined || venue === undefined) throw new Error("expected two entries");
    const snacks = turn(7, "bring snacks", -1);
    const booked = turn(3, "we booked Casa Novak", -1);
    // The turn the venue entry was taken from says nothing new after it; the superseded value is not on the entry's line.
    const pack = packMemory([venue, turn(9, "the offsite is now at Villa Sato", -2), booked, date, snacks], 10_000);
    expect(pack.hits).toEqual([venue, booked, date, snacks]);
    expect(renderRecalled(pack.hits)).toBe(
      [
        `[memory page ${PLANS} (version 1)]`,
        `- venue: the offsite is now at Villa Sato (msg m9, ref ${"9".padStart(12, "0")})`,
        `- date: the offsite is on Monday 3 May (msg m5, ref ${"5".padStart(12, "0")})`,
        "",
        "[earlier message m3] Ada: we booked Casa Novak",
        "",
        "[earlier message m7] Ada: bring snacks",
      ].join("\n"),
    );
    expect(memoryManifest(pack, 10_000).pages).toEqual([{ path: PLANS, version: 1, contentHash: "0".repeat(64), chars: venue.content.length + date.content.length, keys: ["venue", "date"] }]);
  });

  it("skips an entry whose statement a chosen turn already said, and a message said again by someone else, but not one with a new value", () => {
    const [venue] = entriesOf(extractedPage(PLANS, [fact(PLANS, "venue", "the offsite is now at Villa Sato", 9)]));
    if (venue === undefined) throw new Error("expected an entry");
    const said = turn(9, "the offsite is now at Villa Sato", -2);
    expect(packMemory([said, venue], 10_000).hits).toEqual([said]);
    const again = { ...turn(12, "@hiro did you get my message about the offsite?", -1), authorName: "Greta" };
    const byEfua = { ...turn(13, "@hiro did you get my message about the offsite?", -1), authorName: "Efua" };
    const moved = turn(14, "the offsite is now at Casa Novak", -1);
    expect(packMemory([said, again, byEfua, moved], 10_000).hits).toEqual([said, again, moved]);
  });
});

describe("restates", () => {
  it("holds when at least three quarters of an item's content words are in the other's, and never for an item without any", () => {
    const words = (text: string): Set<string> => contentWords(text);
    expect(restates(words("alpha beta gamma delta"), words("alpha beta gamma omega"))).toBe(true);
    expect(restates(words("alpha beta gamma delta epsilon"), words("alpha beta gamma omega"))).toBe(false);
    expect(restates(words("the a to"), words("the a to"))).toBe(false);
    expect([...contentWords("The Lisbon offsite is on 3 June, @Ada!")]).toEqual(["lisbon", "offsite", "3", "june", "ada"]);
  });
});

describe("entriesOf", () => {
  it("cuts an extracted page into its current statements with the message each came from, and leaves a page a person wrote whole", () => {
    const hit = extractedPage(PLANS, [fact(PLANS, "budget", "we have 4,000 euros", 2), fact(PLANS, "budget", "the budget moved to 5,500 euros", 8)]);
    expect(entriesOf(hit)).toEqual([
      {
        type: "entry",
        path: PLANS,
        version: 1,
        contentHash: "0".repeat(64),
        key: "budget",
        content: `- budget: the budget moved to 5,500 euros (msg m8, ref ${"8".padStart(12, "0")})`,
        statement: "the budget moved to 5,500 euros",
        messageId: "m8",
      },
    ]);
    expect(entriesOf(page("notes/ada", "Ada likes tea.\n- not: an entry", -1))).toEqual([]);
  });
});

describe("rankByTerms", () => {
  it("ranks by bm25 over the given documents: rarer terms count more, shorter documents win, ties go to the later one", () => {
    const docs = ["lisbon offsite doc comments", "lisbon offsite venue booked", "the lisbon offsite venue", "nothing here", "lisbon offsite venue booked"];
    expect(rankByTerms(["venue", "booked"], docs)).toEqual([4, 1, 2]);
    expect(rankByTerms(["lisbon"], docs)).toEqual([2, 4, 1, 0]);
    expect(rankByTerms(["absent"], docs)).toEqual([]);
  });
});

describe("recallTerms", () => {
  it("keeps a text's most frequent words that say something, first seen first on ties, at most the cap", () => {
    expect(recallTerms("Where is the Lisbon offsite being held? The offsite!")).toEqual(["offsite", "lisbon", "held"]);
    expect(recallTerms("a b c to of is it")).toEqual([]);
    expect(recallTerms("alpha beta gamma", 2)).toEqual(["alpha", "beta"]);
  });
});

describe("rankCandidates and mergeHits", () => {
  it("takes the pages' best items and the turns in turn, so a page that matches the subject many times cannot shut the turns out", () => {
    const big = extractedPage(PLANS, [
      fact(PLANS, "doc", "the lisbon offsite doc has comments", 1),
      fact(PLANS, "venue", "the lisbon offsite venue is Casa Novak", 2),
      fact(PLANS, "thread", "the lisbon offsite thread is long", 3),
    ]);
    const notes = page("notes/offsite", "Offsite notes a person wrote about the venue.", -1);
    const turns = [turn(20, "the lisbon offsite venue is now Villa Sato", -9), turn(10, "lisbon offsite soon", -3)];
    const ranked = rankCandidates("Where is the Lisbon offsite venue?", [big, notes], turns);
    const [venue, doc, thread] = [entriesOf(big)[1], entriesOf(big)[0], entriesOf(big)[2]];
    expect(ranked).toEqual([turns[0], venue, turns[1], notes, thread, doc]);
    expect(mergeHits([big, notes], turns, 3)).toEqual([turns[0], big, turns[1]]);
  });

  it("leaves an entry to the candidate turn it was taken from, but not to another conversation's message with the same id", () => {
    const page = extractedPage(PLANS, [fact(PLANS, "venue", "the lisbon offsite venue is Casa Novak", 20), fact(PLANS, "date", "the lisbon offsite is on 3 May", 10)]);
    const [venue, date] = entriesOf(page);
    // m20 is the venue's own message; m10 here is another message that happens to share the date fact's id.
    const turns = [turn(20, "the lisbon offsite venue is Casa Novak", -9), turn(10, "lisbon offsite soon", -3)];
    expect(rankCandidates("Lisbon offsite", [page], turns)).toEqual([turns[0], date, turns[1]]);
    expect(venue).toBeDefined();
  });
});
