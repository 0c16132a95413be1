import { describe, expect, it } from "vitest";
import { covers, factOf, isSalient, pageVocabulary, salienceOf, sameFact, significantWords, stem, valuesOf } from "../../src/core/offline-summarizer-facts";

/**
 * The offline compactor's reading of one sentence, rule by rule: what counts as a word, a value, a
 * name, and when two sentences state the same fact or a page already holds one. The compaction-level
 * tests (offline-summarizer-facts.test.ts) show the outcome; these pin each rule it rests on.
 */

const sorted = (set: ReadonlySet<string>): string[] => [...set].sort();

describe("significantWords and stem", () => {
  it("keeps lower-cased words of three letters or more that are not stopwords, apostrophes folded", () => {
    expect(significantWords("The Team’s budget is BIG and it's ok, I'm in")).toEqual(["team's", "budget", "big"]);
    expect(significantWords("ok so we go")).toEqual([]);
  });

  it("strips one suffix, keeping at least three letters, and a possessive first", () => {
    expect(["invoices", "invoicing", "booked", "boxes", "cats", "tree", "ada's", "is", "ring", "bed", "use"].map(stem)).toEqual([
      "invoic",
      "invoic",
      "book",
      "box",
      "cat",
      "tre",
      "ada",
      "is",
      "ring",
      "bed",
      "use",
    ]);
  });
});

describe("valuesOf", () => {
  it("reads amounts, times, dates and counts with their currency, trailing punctuation dropped", () => {
    expect(sorted(valuesOf("It costs $45, or €1,200.50."))).toEqual(["$45", "€1,200.50"]);
    expect(sorted(valuesOf("Meet at 10:30 on 2026-03-03;"))).toEqual(["10:30", "2026-03-03"]);
    expect(sorted(valuesOf("v2.1-"))).toEqual(["2.1"]);
  });

  it("takes months, weekdays and currencies as values by themselves, and May only beside a day", () => {
    expect(sorted(valuesOf("Monday in March, 40k EUR"))).toEqual(["40k", "eur", "march", "monday"]);
    expect(sorted(valuesOf("Due May 3rd"))).toEqual(["3rd", "may"]);
    expect(sorted(valuesOf("3 of May"))).toEqual(["3", "may"]);
    expect(valuesOf("You may go")).toEqual(new Set());
  });
});

describe("factOf", () => {
  it("names what a sentence is about apart from whom it names and the values it states", () => {
    const fact = factOf("I'll book Hotel Azul for Ada's team by friday.", "ben");
    expect({ ...fact, key: sorted(fact.key), subjects: sorted(fact.subjects), values: sorted(fact.values) }).toEqual({
      key: ["book", "team"],
      subjects: ["ada", "azul", "hotel"],
      named: true,
      values: ["friday"],
      decision: false,
      commitment: true,
      preference: false,
      question: false,
    });
  });

  it("makes a first-person sentence that names no one about its speaker, and any other about no one", () => {
    expect(sorted(factOf("My favourite is tea", "Ada").subjects)).toEqual(["ada"]);
    expect(factOf("My favourite is tea", "Ada").named).toBe(false);
    expect(sorted(factOf("The favourite is tea", "ada").subjects)).toEqual([]);
    expect(sorted(factOf("My favourite is tea", "").subjects)).toEqual([]);
  });

  it("reads a numbered thing as a name of its own, and leaves update words out of what the sentence is about", () => {
    const fact = factOf("Update: invoice 1043 moved to March 3", "ada");
    expect(sorted(fact.key)).toEqual(["invoic"]);
    expect(sorted(fact.subjects)).toEqual(["invoic 1043"]);
    expect(fact.decision).toBe(true);
    expect(sorted(factOf("Ticket #88 is done", "ada").subjects)).toEqual(["ticket 88"]);
    // The sentence's closing mark is not part of the number: both name the same invoice, so the later one updates the earlier.
    expect(sorted(factOf("We paid invoice 88.", "ada").subjects)).toEqual(["invoic 88"]);
    expect(sameFact(factOf("Invoice 88 is due on May 3.", "ada"), factOf("Update: invoice 88 is due on May 10.", "ada"))).toBe(true);
  });

  it("takes an @handle as a name, and the first word of a sentence only as a possessive", () => {
    expect(sorted(factOf("I love the @greta plan", "ada").subjects)).toEqual(["greta"]);
    expect(sorted(factOf("Lisbon it is", "ada").subjects)).toEqual([]);
    expect(sorted(factOf("Ada's flight lands late", "ben").subjects)).toEqual(["ada"]);
    expect(factOf("Is the venue confirmed?", "ada").question).toBe(true);
  });
});

describe("salience", () => {
  it("weighs values and decisions first, then commitments, names and preferences, and halves a question", () => {
    expect(salienceOf(factOf("I'll book Hotel Azul for Ada's team by friday.", "ben"))).toBe(3 + 2 + 1.5);
    expect(salienceOf(factOf("Update: invoice 1043 moved to March 3", "ada"))).toBe(3 + 1 + 2.5 + 1.5);
    expect(salienceOf(factOf("We decided on Lisbon", "ada"))).toBe(2.5 + 1.5);
    expect(salienceOf(factOf("My favourite is tea", "ada"))).toBe(1.5);
    expect(salienceOf(factOf("Is the venue confirmed?", "ada"))).toBe(2.5 / 2);
    expect(salienceOf(factOf("the weather is nice", ""))).toBe(0);
  });

  it("counts a sentence as durable when it states a value, a name, a decision, a commitment or a preference", () => {
    expect(isSalient(factOf("the weather is nice", ""))).toBe(false);
    for (const sentence of ["it is 5 euros", "ask @ada", "we decided", "I will send it", "I prefer tea"]) expect(isSalient(factOf(sentence, "ben")), sentence).toBe(true);
  });
});

describe("sameFact", () => {
  it("is the same fact when the subjects match and the words nearly do; a different value is an update of it", () => {
    expect(sameFact(factOf("The offsite budget is 4000 euros", "ada"), factOf("The offsite budget is 5000 euros", "ben"))).toBe(true);
    expect(sameFact(factOf("Ada prefers the window seat", "x"), factOf("Ada prefers the window seat please", "y"))).toBe(true);
  });

  it("is another fact for another person, a question against a statement, or a sentence that says nothing", () => {
    expect(sameFact(factOf("Ada prefers the window seat", "x"), factOf("Ben prefers the window seat", "y"))).toBe(false);
    expect(sameFact(factOf("Is the budget 4000?", "x"), factOf("The budget is 4000", "y"))).toBe(false);
    expect(sameFact(factOf("hello there", "x"), factOf("hello there", "y"))).toBe(false);
  });

  it("needs three fifths of the words with a value and four fifths without", () => {
    // With a value: {offsit, budget, tight} against {offsit, budget} share 2 of 3 (0.67 >= 0.6).
    expect(sameFact(factOf("The offsite budget is tight at 4000", "a"), factOf("The offsite budget is 4000", "a"))).toBe(true);
    // Without one, the same overlap is not enough (0.67 < 0.8), and all of it is.
    expect(sameFact(factOf("The offsite budget is tight", "a"), factOf("The offsite budget", "a"))).toBe(false);
    expect(sameFact(factOf("The offsite budget", "a"), factOf("offsite budgets", "a"))).toBe(true);
  });
});

describe("covers", () => {
  const page = pageVocabulary("The offsite budget is 4000 euros, Ada owns the venue booking.");

  it("reads a page's words, names and values", () => {
    expect({ words: sorted(page.words), values: sorted(page.values) }).toEqual({ words: ["ada", "book", "budget", "euro", "offsit", "own", "venu"], values: ["4000", "euros"] });
  });

  it("holds a fact whose every value and two thirds of whose words and names the page has, not an older value", () => {
    expect(covers(page, factOf("offsite budget 4000", "x"))).toBe(true);
    expect(covers(page, factOf("offsite budget 5000", "x"))).toBe(false);
    expect(covers(page, factOf("Ada owns the venue", "x"))).toBe(true);
    expect(covers(page, factOf("the offsite catering menu", "x"))).toBe(false);
  });

  it("does not take one word without a value as a fact the page holds", () => {
    expect(covers(page, factOf("venue", "x"))).toBe(false);
    expect(covers(page, factOf("venue booking", "x"))).toBe(true);
  });
});
