import { describe, expect, it } from "vitest";
import type { SliceTurn } from "../../src/core/fact-extraction";
import { extractFacts, oneLine, sentencesOf, slugOf, topicOf } from "../../src/core/fact-extraction";

/**
 * The offline extractor's rules, sentence by sentence: which page kind a sentence goes to (the first
 * rule that matches), what its key is, who said it, and what is left out.
 */

const said = (text: string, role: SliceTurn["role"] = "user", author = { handle: "ada", name: "Ada L" }): SliceTurn => ({ messageId: "m1", seq: 1, eventHash: "a".repeat(64), role, author, text });
/** The facts of one sentence by Ada, without the participant fact her first turn adds. */
const factsOf = (text: string): [string, string, string][] => extractFacts([said(text)]).slice(1).map((f) => [f.page, f.key, f.statement]);

describe("classification", () => {
  it.each([
    ["When is the offsite?", "extracted/questions/offsite"],
    ["We decided to go with Casa Novak.", "extracted/decisions/go-casa-novak"],
    ["I'll send the draft by Friday.", "extracted/commitments/i-ll-send-draft"],
    ["The deadline is March 3rd for everyone.", "extracted/commitments/deadline"],
    ["The trip plan is ready for review.", "extracted/plans/trip-plan"],
    ["Update: the offsite date moved to May 10.", "extracted/plans/offsite-date"],
    ["The party is on 2026-05-03 at noon.", "extracted/dates/party"],
    ["We meet at Lisbon Harbour tomorrow.", "extracted/dates/meet-lisbon-harbour-tomorrow"],
    ["The budget is $4,500 for the team.", "extracted/numbers/budget"],
    ["Seats: 12 seats left now.", "extracted/numbers/12-seats-left-now"],
    ["So, we decided that the venue is Quinta.", "extracted/decisions/venue"],
  ])("files %j under %s, attributed to its speaker", (sentence, page) => {
    expect(factsOf(sentence)).toEqual([[page, page.split("/").at(-1), `@ada (Ada L): ${sentence}`]]);
  });

  it("files a speaker's own preference on their page, keyed by what they prefer", () => {
    expect(factsOf("I really prefer green tea.")).toEqual([["extracted/people/ada", "preference-green-tea", "@ada (Ada L): I really prefer green tea."]]);
    expect(factsOf("I am allergic to peanuts.")).toEqual([["extracted/people/ada", "preference-peanuts", "@ada (Ada L): I am allergic to peanuts."]]);
    expect(factsOf("I love the new office.")).toEqual([["extracted/people/ada", "preference-new-office", "@ada (Ada L): I love the new office."]]);
    // A reply's "preference" is no person's: it is filed by what it states.
    expect(extractFacts([said("I prefer the budget of 40 euros.", "assistant", { handle: "bot", name: "" })]).map((f) => [f.page, f.statement])).toEqual([
      ["extracted/numbers/prefer-budget-40-euros", "@bot: I prefer the budget of 40 euros."],
    ]);
  });

  it("leaves out a sentence no rule matches, and one too short to state anything", () => {
    expect(factsOf("Nothing in particular here today.")).toEqual([]);
    expect(factsOf("It is raining a lot now.")).toEqual([]);
    expect(factsOf("Ok, 5 €")).toEqual([]);
  });

  it("adds each person once, as the participant they are, from their first turn", () => {
    const turns = [1, 2].map((n) => ({ ...said("hi", "user", { handle: "bob", name: "bob" }), messageId: `m${n}`, seq: n }));
    expect(extractFacts(turns).map((f) => [f.page, f.key, f.statement, f.sources[0]?.messageId])).toEqual([["extracted/people/bob", "name", "@bob is bob, a participant of this conversation.", "m1"]]);
  });
});

describe("topicOf", () => {
  it("takes the subject before a verb of being or changing, past leading words, a speaker tag and a hedge", () => {
    expect(topicOf("Update: the offsite date moved to May 10.")).toBe("offsite-date");
    expect(topicOf("So, we decided that the venue is Quinta.")).toBe("venue");
    expect(topicOf("Ada: the venue is Casa.")).toBe("venue");
    expect(topicOf("Our budget changed to 5k")).toBe("budget");
  });

  it("skips a pronoun or a question word as the subject and takes the first content words instead", () => {
    expect(topicOf("When is the offsite?")).toBe("offsite");
    expect(topicOf("It is raining a lot now.")).toBe("raining-lot-now");
    expect(topicOf("the first place cancelled, the offsite is now at Villa Sato")).toBe("first-place-cancelled-the");
  });
});

describe("text helpers", () => {
  it("splits sentences after . ! ? and at line breaks, dropping pieces under eight characters", () => {
    expect(sentencesOf("Short. This is long enough! And this?\nnew line here\n\nok")).toEqual(["This is long enough!", "And this?", "new line here"]);
  });

  it("makes slugs of at most the given words and 48 characters, accents folded, and nothing of no word", () => {
    expect(slugOf("Café  déjà-vu 2026!! extra words here more")).toBe("cafe-deja-vu-2026-extra-words");
    expect(slugOf("one two three four five six seven", 3)).toBe("one-two-three");
    expect(slugOf("a".repeat(60))).toBe("a".repeat(48));
    expect(slugOf("!!!")).toBe("");
  });

  it("collapses whitespace into one line and cuts it with a mark", () => {
    expect(oneLine(" a\n b  c ")).toBe("a b c");
    expect(oneLine("abcdef", 4)).toBe("abc…");
  });
});
