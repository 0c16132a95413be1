import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { renderBoundaryBody, validateCompactorOutput } from "../../src/core/compactor-output";
import type { Amendment, CompactionContent, Packet } from "../../src/core/packet";
import { offlineCompaction } from "../../src/core/offline-summarizer";
import { cutAtWord, sentences } from "../../src/core/offline-summarizer-candidates";
import type { Fact } from "../../src/core/offline-summarizer-facts";
import { covers, factOf, salienceOf, sameFact, significantWords, stem, valuesOf } from "../../src/core/offline-summarizer-facts";
import type { TurnSpec } from "../support/packet-fixture";
import { ADA, BOB, memoryPage, packetFixture, previousBoundary } from "../support/packet-fixture";

function content(packet: Packet): CompactionContent {
  const result = validateCompactorOutput(packet, { text: offlineCompaction(packet), finishReason: null });
  if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
  return result.value;
}

/** What the agent is served of the boundary: its body, pointers and open threads included. */
const served = (packet: Packet): string => renderBoundaryBody(content(packet));

/** Twenty durable facts of different kinds, each with the words a later question would look for. */
const FACTS: readonly { readonly text: string; readonly probe: string }[] = [
  { text: "The offsite is in Lisbon on March 14.", probe: "March 14" },
  { text: "My flight lands at 10:40 on Thursday.", probe: "10:40" },
  { text: "The venue deposit is 2,300 EUR.", probe: "2,300 EUR" },
  { text: "We decided to use Postgres for the ledger.", probe: "Postgres for the ledger" },
  { text: "I will send the signed contract by Friday.", probe: "signed contract by Friday" },
  { text: "Carol is allergic to peanuts.", probe: "allergic to peanuts" },
  { text: "The hotel booking reference is KX-4471.", probe: "KX-4471" },
  { text: "Let's ship the beta to Dana's team first.", probe: "beta to Dana" },
  { text: "The quarterly budget is 48k USD.", probe: "48k USD" },
  { text: "Standup moves to 09:15 starting next week.", probe: "09:15" },
  { text: "Ben owns the onboarding checklist.", probe: "onboarding checklist" },
  { text: "The launch date is 2027-02-01.", probe: "2027-02-01" },
  { text: "We agreed to drop the mobile app for now.", probe: "drop the mobile app" },
  { text: "The client prefers invoices as PDF attachments.", probe: "invoices as PDF" },
  { text: "Our API rate limit is 600 requests per minute.", probe: "600 requests" },
  { text: "The workshop has 35 seats.", probe: "35 seats" },
  { text: "Eve joins as designer on April 3.", probe: "April 3" },
  { text: "The office keys are with Gustav at reception.", probe: "Gustav" },
  { text: "The retro is on Tuesday at 16:00.", probe: "16:00" },
  { text: "Frank approved the 12% discount for Nordic clients.", probe: "12% discount" },
];

/** Chat that states nothing: no value, no name, no decision; lower case so no word reads as a name. */
const FILLER_WORDS = "that sounds fun the weather was nice coffee here is pretty good honestly we should chat more about random stuff later funny meme lunch tasty enjoyed walk park sunny cloudy podcast episode music playlist garden quiet bus slow rain window".split(" ");

function fillerSentence(random: () => number): string {
  const words = Array.from({ length: 6 + Math.floor(random() * 9) }, () => FILLER_WORDS[Math.floor(random() * FILLER_WORDS.length)] ?? "rain");
  const sentence = words.join(" ");
  return `${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}.`;
}

/** A deterministic generator (mulberry32), so a slice is the same on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * A two-speaker slice of about `chars` characters of filler with `facts` planted at spread,
 * seed-chosen places: each fact is its own turn.
 */
function plantedSlice(chars: number, facts: readonly { readonly text: string }[], seed: number): TurnSpec[] {
  const random = seeded(seed);
  const turns: TurnSpec[] = [];
  let size = 0;
  while (size < chars) {
    const text = Array.from({ length: 1 + Math.floor(random() * 2) }, () => fillerSentence(random)).join(" ");
    turns.push({ text, author: turns.length % 2 === 0 ? ADA : BOB });
    size += text.length;
  }
  const step = turns.length / facts.length;
  facts.forEach((fact, i) => {
    const at = Math.floor(i * step + random() * step * 0.9) + i;
    turns.splice(at, 0, { text: fact.text, author: i % 2 === 0 ? ADA : BOB });
  });
  return turns;
}

const kept = (body: string): number => FACTS.filter((f) => body.includes(f.probe)).length;

describe("offlineCompaction keeps facts", () => {
  it("keeps all twenty facts planted in a 20,000-character slice, and none of its filler", () => {
    const turns = plantedSlice(20_000, FACTS, 7);
    const body = served(packetFixture({ turns }));
    expect(kept(body)).toBe(FACTS.length);
    // Every line is a planted fact: not one sentence of filler took a line.
    for (const line of body.split("\n")) expect(FACTS.some((f) => line.endsWith(`: ${f.text}`))).toBe(true);
  });

  it("keeps facts from every slice along a chain of five runs, each building on the previous boundary", () => {
    let previous: string | null = null;
    for (let run = 0; run < 5; run += 1) {
      const turns = plantedSlice(10_000, FACTS.slice(run * 4, run * 4 + 4), 100 + run);
      previous = served(packetFixture({ turns, previousBoundary: previous === null ? null : previousBoundary(previous) }));
    }
    expect(kept(previous ?? "")).toBe(FACTS.length);
  });

  it("keeps a planted number, date and decision wherever they fall in a long slice of filler", () => {
    const planted = [FACTS[2], FACTS[11], FACTS[12]].filter((f) => f !== undefined);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.integer({ min: 4_000, max: 30_000 }), (seed, chars) => {
        const turns = plantedSlice(chars, planted, seed);
        const body = served(packetFixture({ turns }));
        for (const fact of planted) expect(body).toContain(fact.probe);
        // Filler states nothing, so not one of its sentences takes a line.
        for (const line of body.split("\n")) expect(planted.some((f) => line.endsWith(`: ${f.text}`))).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  const UPDATES: readonly { readonly first: string; readonly later: (v: string) => string; readonly value: fc.Arbitrary<string> }[] = [
    { first: "The venue deposit is 2,300 EUR.", later: (v) => `Update: the venue deposit is ${v} EUR.`, value: fc.integer({ min: 2_400, max: 9_999 }).map(String) },
    { first: "The offsite is in Lisbon on March 14.", later: (v) => `The offsite in Lisbon moved to March ${v}.`, value: fc.integer({ min: 15, max: 31 }).map(String) },
    { first: "The retro is on Tuesday at 16:00.", later: (v) => `Correction: the retro is on Tuesday at ${v}.`, value: fc.constantFrom("09:30", "11:00", "17:45") },
  ];

  it("keeps only the latest value of a fact that was updated later in the slice", () => {
    fc.assert(
      fc.property(fc.constantFrom(...UPDATES), fc.integer({ min: 0, max: 2 ** 31 - 1 }), (update, seed) => {
        const value = fc.sample(update.value, { seed, numRuns: 1 })[0] ?? "";
        const later = update.later(value);
        const turns = plantedSlice(6_000, [{ text: update.first }, { text: later }], seed);
        const body = served(packetFixture({ turns }));
        expect(body).toContain(later);
        expect(body).not.toContain(update.first);
      }),
      { numRuns: 60 },
    );
  });

  it("keeps two different facts about the same thing: a later one replaces only the same fact", () => {
    const turns = plantedSlice(4_000, [{ text: "The venue deposit is 2,300 EUR." }, { text: "The venue opens its doors at 08:30 on the first day." }], 5);
    const body = served(packetFixture({ turns }));
    expect(body).toContain("The venue deposit is 2,300 EUR.");
    expect(body).toContain("The venue opens its doors at 08:30 on the first day.");
  });

  it("keeps two facts about different people apart, even in the same words", () => {
    const turns = plantedSlice(4_000, [{ text: "My flight lands at 10:40." }, { text: "My flight lands at 12:15." }], 3);
    const body = served(packetFixture({ turns }));
    expect(body).toContain("@ada: My flight lands at 10:40.");
    expect(body).toContain("@bob: My flight lands at 12:15.");
  });
});

describe("offlineCompaction applies the amendments it absorbs", () => {
  const PREVIOUS = [
    "Earlier: [s3] @ada: The door code is 4512.",
    "[s5] @bob: The venue deposit is 2,300 EUR.",
    "[s7] @ada: We decided to use Postgres for the ledger.",
  ].join("\n");
  const amendment = (turnId: string, kind: Amendment["kind"], text: string | null): Amendment => ({
    turnId,
    group: Number(turnId.slice(1)),
    role: "user",
    kind,
    hashBefore: kind === "added" ? null : "a".repeat(64),
    hashAfter: kind === "deleted" ? null : "c".repeat(64),
    text,
  });

  it("writes an edited fact with its corrected value, and a deleted message's content not at all", () => {
    const packet = packetFixture({
      previousBoundary: previousBoundary(PREVIOUS, 8),
      amendments: [amendment("s3", "deleted", null), amendment("s5", "edited", "The venue deposit is 2,800 EUR.")],
      sizes: { replacedChars: 6_000 },
    });
    const body = served(packet);
    expect(body).toContain("[s5] @bob (edited): The venue deposit is 2,800 EUR.");
    expect(body).not.toContain("2,300");
    expect(body).not.toContain("4512");
    expect(body).not.toContain("door code");
    // What the amendments did not touch is carried on, and the first surviving line keeps the chain connected.
    expect(body.split("\n")[0]).toBe("Earlier: [s7] @ada: We decided to use Postgres for the ledger.");
  });

  const CORRECTED = { s3: "The door code is 7781 now.", s5: "The venue deposit is 2,800 EUR.", s7: "We decided to use MySQL for the ledger." } as const;

  it("applies edits and deletions of any carried line, whatever else the slice says", () => {
    fc.assert(
      fc.property(fc.subarray(["s3", "s5", "s7"]), fc.subarray(["s3", "s5", "s7"]), fc.integer({ min: 0, max: 1_000 }), (deleted, edited, seed) => {
        const edits = edited.filter((id) => !deleted.includes(id));
        const packet = packetFixture({
          turns: plantedSlice(3_000, [{ text: "Frank approved the 12% discount for Nordic clients." }], seed),
          previousBoundary: previousBoundary(PREVIOUS, 8),
          amendments: [...deleted.map((id) => amendment(id, "deleted", null)), ...edits.map((id) => amendment(id, "edited", CORRECTED[id as keyof typeof CORRECTED]))],
        });
        const body = served(packet);
        const original = { s3: "4512", s5: "2,300", s7: "Postgres" } as const;
        for (const id of [...deleted, ...edits]) expect(body).not.toContain(original[id as keyof typeof original]);
        for (const id of edits) expect(body).toContain(`[${id}] @`);
        for (const id of edits) expect(body).toContain(CORRECTED[id as keyof typeof CORRECTED]);
      }),
      { numRuns: 60 },
    );
  });
});

describe("offlineCompaction points at memory instead of restating it", () => {
  const turns: TurnSpec[] = plantedSlice(5_000, [{ text: "The venue deposit is 2,300 EUR." }, { text: "Carol is allergic to peanuts." }], 11);

  it("points at an extracted page that holds a fact, and does not restate the fact", () => {
    const page = memoryPage("extracted/events/offsite-venue", "Venue deposit: 2,300 EUR (paid by Ada).");
    const result = content(packetFixture({ turns, memoryPages: [page] }));
    expect(result.salientFacts.memoryRefs.map((r) => r.path)).toEqual(["extracted/events/offsite-venue"]);
    expect(result.salientFacts.memoryRefs[0]?.note).toContain("2,300 EUR");
    expect(result.summary).not.toContain("2,300");
    expect(result.summary).toContain("allergic to peanuts");
    expect(result.degraded).toBe(false);
  });

  it("does not take a page that holds an older value for the fact: the new value is written out", () => {
    const stale = memoryPage("extracted/events/offsite-venue", "Venue deposit: 1,900 EUR.");
    const result = content(packetFixture({ turns, memoryPages: [stale] }));
    expect(result.summary).toContain("The venue deposit is 2,300 EUR.");
    // At most a pointer by topic, which claims no value.
    expect(result.salientFacts.memoryRefs.map((r) => r.note)).toEqual(["slice mentions deposit, eur, venue"]);
  });
});

describe("offlineCompaction over one recurring topic", () => {
  const talk = (i: number): string => `Message ${i}: about the offsite venue, ${i % 3 === 0 ? "Lisbon" : "Porto"} is preferred, with a budget of ${1000 + i * 10} euros for the team.`;
  const turns = Array.from({ length: 20 }, (_, i) => talk(i));

  it("still points at a recalled page on the slice's topic when no single fact of the page is restated", () => {
    const decision = memoryPage("decisions/offsite-venue", "Offsite venue decision: Lisbon was chosen by Ada; Porto was the runner-up because of the budget.");
    const unrelated = memoryPage("people/unrelated", "Zed likes chess and tea.");
    const result = content(packetFixture({ turns, memoryPages: [decision, unrelated] }));
    expect(result.salientFacts.memoryRefs.map((r) => r.path)).toEqual(["decisions/offsite-venue"]);
    expect(result.degraded).toBe(false);
  });

  it("keeps the latest value of each recurring fact, on more than one line", () => {
    const result = content(packetFixture({ turns }));
    expect(result.summary).toContain("Message 18: about the offsite venue, Lisbon is preferred, with a budget of 1180 euros");
    expect(result.summary).toContain("Message 19: about the offsite venue, Porto is preferred, with a budget of 1190 euros");
    expect(result.summary).not.toContain("1170 euros");
    expect(result.summary.length).toBeGreaterThan(result.preview.length);
  });
});

describe("reading one sentence", () => {
  it.each([
    ["invoices", "invoic"],
    ["invoicing", "invoic"],
    ["invoice", "invoic"],
    ["booked", "book"],
    ["ada's", "ada"],
    // A suffix is stripped only when three letters stay.
    ["uses", "use"],
    ["bed", "bed"],
    ["sing", "sing"],
  ])("stems %s to %s", (word, stemmed) => {
    expect(stem(word)).toBe(stemmed);
  });

  it("takes lower-cased words of three letters or more, apostrophes made plain, without stopwords", () => {
    expect(significantWords("Ada’s invoices: the BIG ones")).toEqual(["ada's", "invoices", "big", "ones"]);
  });

  it.each([
    ["The budget is 45K, paid on 2026-03-03.", ["45k", "2026-03-03"]],
    ["Offsite on May 3, in EUR.", ["3", "eur", "may"]],
    ["We may go Friday.", ["friday"]],
    ["Call me at 10:30.", ["10:30"]],
  ])("reads the values of %s", (text, values) => {
    expect([...valuesOf(text)]).toEqual(values);
  });

  const read = (fact: Fact) => ({ ...fact, key: [...fact.key], subjects: [...fact.subjects], values: [...fact.values] });

  it("reads a sentence in the first person as about its speaker", () => {
    expect(read(factOf("I prefer the window seat.", "Ada"))).toEqual({
      key: ["prefer", "window", "seat"],
      subjects: ["ada"],
      named: false,
      values: [],
      decision: false,
      commitment: false,
      preference: true,
      question: false,
    });
    expect(read(factOf("The window seat is taken.", "Ada")).subjects).toEqual([]);
  });

  it("reads whom a sentence names (a possessive first word, a numbered thing), its values, and a question", () => {
    expect(read(factOf("Ada's flight 1043 lands at 10:30?  ", "bob"))).toEqual({
      key: ["flight", "land"],
      subjects: ["ada", "flight 1043"],
      named: true,
      values: ["1043", "10:30"],
      decision: false,
      commitment: false,
      preference: false,
      question: true,
    });
  });

  it("reads a handle as a name, a commitment by a weekday, and a value glued to letters as no name", () => {
    expect(read(factOf("Send Q3 numbers to @Carla by Friday.", "bob"))).toEqual({
      key: ["send", "number"],
      subjects: ["carla"],
      named: true,
      values: ["3", "friday"],
      decision: false,
      commitment: true,
      preference: false,
      question: false,
    });
  });
});

describe("weighing and comparing facts", () => {
  const fact = (over: Partial<Fact> = {}): Fact => ({
    key: new Set(),
    subjects: new Set(),
    named: false,
    values: new Set(),
    decision: false,
    commitment: false,
    preference: false,
    question: false,
    ...over,
  });
  const set = (...items: string[]) => new Set(items);

  it("weighs values first (a little more for a second and third), then decisions, commitments, names and preferences; a question half", () => {
    expect(salienceOf(fact())).toBe(0);
    expect([1, 2, 3, 4].map((n) => salienceOf(fact({ values: set(...["1", "2", "3", "4"].slice(0, n)) })))).toEqual([3, 3.5, 4, 4]);
    expect(salienceOf(fact({ decision: true }))).toBe(2.5);
    expect(salienceOf(fact({ commitment: true }))).toBe(2);
    expect(salienceOf(fact({ named: true }))).toBe(1.5);
    expect(salienceOf(fact({ preference: true }))).toBe(1.5);
    const everything = fact({ values: set("1"), decision: true, commitment: true, named: true, preference: true });
    expect(salienceOf(everything)).toBe(10.5);
    expect(salienceOf({ ...everything, question: true })).toBe(5.25);
  });

  it("counts two sentences as one fact only about the same subjects, both statements or both questions", () => {
    const about = (subjects: Set<string>, question = false) => fact({ key: set("flight", "land"), subjects, question });
    expect(sameFact(about(set("ada")), about(set("ada")))).toBe(true);
    expect(sameFact(about(set("ada")), about(set("bob")))).toBe(false);
    expect(sameFact(about(set("ada")), about(set("ada", "bob")))).toBe(false);
    expect(sameFact(about(set("ada")), about(set("ada"), true))).toBe(false);
  });

  it("counts a fact with a value as restated from three fifths of its words, one without only from four fifths", () => {
    const four = fact({ key: set("a", "b", "c", "d") });
    const fiveOther = fact({ key: set("a", "b", "c", "d", "x") });
    const three = fact({ key: set("a", "b", "c") });
    const five = fact({ key: set("a", "b", "c", "d", "e") });
    const six = fact({ key: set("a", "b", "c", "d", "e", "f") });
    expect(sameFact(four, five)).toBe(true);
    expect(sameFact(five, six)).toBe(true);
    expect(sameFact(five, fiveOther)).toBe(false);
    expect(sameFact(three, five)).toBe(false);
    // A value on either side: an update of the same fact from three fifths of the words.
    expect(sameFact({ ...three, values: set("5") }, five)).toBe(true);
    expect(sameFact(three, { ...five, values: set("6") })).toBe(true);
    expect(sameFact({ ...fact({ key: set("a", "b") }), values: set("5") }, five)).toBe(false);
    // Nothing to compare but the value: the same fact; nothing at all: not a fact to merge.
    expect(sameFact(fact({ values: set("5") }), fact({ values: set("6") }))).toBe(true);
    expect(sameFact(fact(), fact())).toBe(false);
    // A value with no words is not the same fact as a value with some.
    expect(sameFact(fact({ values: set("5") }), fact({ key: set("a"), values: set("6") }))).toBe(false);
    expect(sameFact(fact({ key: set("a"), values: set("6") }), fact({ values: set("5") }))).toBe(false);
  });

  it("lets a page cover a fact that holds every value and two thirds of its terms", () => {
    const page = (words: string[], values: string[] = []) => ({ words: new Set(words), values: new Set(values) });
    const flight = fact({ key: set("flight", "land", "gate"), values: set("10:30") });
    expect(covers(page(["flight", "land"], ["10:30"]), flight)).toBe(true);
    expect(covers(page(["flight"], ["10:30"]), flight)).toBe(false);
    expect(covers(page(["flight", "land", "gate"], ["11:00"]), flight)).toBe(false);
    // Whom a named fact is about counts among its terms.
    const named = fact({ key: set("flight"), subjects: set("ada"), named: true });
    expect(covers(page(["flight"]), named)).toBe(false);
    expect(covers(page(["flight", "ada"]), named)).toBe(true);
    // One term with a value is enough; one term alone says too little to be covered.
    expect(covers(page(["flight"], ["5"]), fact({ key: set("flight"), values: set("5") }))).toBe(true);
    expect(covers(page(["flight"]), fact({ key: set("flight") }))).toBe(false);
  });
});

describe("cutting lines and sentences", () => {
  it("keeps a line of exactly the limit, and cuts a longer one after its last whole word, without the spaces before the cut", () => {
    expect(cutAtWord("x".repeat(27), 27)).toBe("x".repeat(27));
    expect(cutAtWord(`${"a".repeat(10)} ${"b".repeat(10)}  ${"c".repeat(10)}`, 27)).toBe(`${"a".repeat(10)} ${"b".repeat(10)}…`);
  });

  it("hard-cuts a single word longer than the limit, the mark included in the limit", () => {
    expect(cutAtWord("x".repeat(30), 10)).toBe(`${"x".repeat(9)}…`);
  });

  it("splits text into sentences at line breaks and sentence ends, each on one line of single spaces", () => {
    expect(sentences("\nAda  and\tBob met.  Then?\n\nThey left!   Done")).toEqual(["Ada and Bob met.", "Then?", "They left!", "Done"]);
  });
});
