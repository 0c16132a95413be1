import { describe, expect, it } from "vitest";
import { candidatesOf, cutAtWord, openThreadsOf, sentences } from "../../src/core/offline-summarizer-candidates";
import type { Amendment } from "../../src/core/packet";
import { ADA, AGENT, BOB, packetFixture, previousBoundary } from "../support/packet-fixture";

/**
 * The lines the offline compactor chooses from: what the previous boundary carries (less what an
 * absorbed amendment voids), the amendments' corrected sentences, and the slice's sentences, each
 * tagged with its turn; and the questions the slice left open.
 */

const HASH = "a".repeat(64);
const amendment = (turnId: string, kind: Amendment["kind"], text: string | null): Amendment => ({
  turnId,
  group: Number(turnId.slice(1)),
  role: "user",
  kind,
  hashBefore: kind === "added" ? null : HASH,
  hashAfter: kind === "deleted" ? null : "c".repeat(64),
  text,
});

describe("cutAtWord and sentences", () => {
  it("cuts at the last word boundary that fits, marking the cut, and leaves what fits alone", () => {
    expect(cutAtWord("hello world", 11)).toBe("hello world");
    // The last word of the room is dropped even when whole: the cut cannot tell it was.
    expect(cutAtWord("hello world foo", 12)).toBe("hello…");
    expect(cutAtWord("hello world foo", 13)).toBe("hello world…");
    expect(cutAtWord("abcdefghij", 5)).toBe("abcd…");
    expect(cutAtWord("a bcdefghij", 6)).toBe("a…");
    expect(cutAtWord(" abc def", 5)).toBe(" abc…");
  });

  it("splits at line breaks and after sentence marks, whitespace collapsed, empty pieces dropped", () => {
    expect(sentences("One. Two!  Three?\n\nFour\tfive.   \n")).toEqual(["One.", "Two!", "Three?", "Four five."]);
    expect(sentences("v1.2 is out. e.g. this")).toEqual(["v1.2 is out.", "e.g.", "this"]);
    expect(sentences(" \n ")).toEqual([]);
  });
});

describe("candidatesOf", () => {
  const packet = packetFixture({
    turns: [
      { text: "We decided on Lisbon. ok", author: ADA },
      { text: "Budget is 4,000 EUR?", author: { id: "u:x", name: "Xen\nFake" } },
      { text: "hm", author: BOB },
      { text: "Noted.", role: "assistant", author: AGENT },
      { text: "Who books the hotel for the offsite?", author: BOB },
    ],
    previousBoundary: previousBoundary(
      "[s1] @ada: The venue is Quinta.\nEarlier: Earlier: [s2] @bob: Flights are TP123.\nOpen: @ada asked: when?\nuntagged model line about budget 5k\n\nnotes after the summary",
    ),
    amendments: [amendment("s1", "edited", "The venue is Casa. Second sentence 7."), amendment("s2", "deleted", null), amendment("s9", "added", "Late fact 42.")],
  });

  it("carries the previous summary's lines but the ones an amendment voids, then the corrections, then the slice, in that order", () => {
    expect(candidatesOf(packet).map((c) => [c.order, c.turnId, c.text, c.carried])).toEqual([
      [0, null, "untagged model line about budget 5k", true],
      [1, "s1", "[s1] @ada (edited): The venue is Casa.", false],
      [2, "s1", "[s1] @ada (edited): Second sentence 7.", false],
      [3, "s9", "[s9] (added): Late fact 42.", false],
      [4, "s1", "[s1] @ada: We decided on Lisbon.", false],
      [5, "s2", "[s2] @Xen Fake: Budget is 4,000 EUR?", false],
      [6, "p4", "[p4] @helper: Noted.", false],
      [7, "s5", "[s5] @bob: Who books the hotel for the offsite?", false],
    ]);
  });

  it("reads each candidate's fact without its speaker tag, and its speaker as the fact's subject", () => {
    const [, , , , lisbon, budget] = candidatesOf(packet);
    expect(lisbon?.words).toEqual(["decided", "lisbon"]);
    expect(lisbon?.fact.decision).toBe(true);
    expect([...(budget?.fact.values ?? [])]).toEqual(["4,000", "eur"]);
    expect(budget?.fact.question).toBe(true);
  });

  it("keeps a carried line that no amendment touches, with its speaker", () => {
    // "ok" says nothing, so the slice adds no candidate of its own.
    const kept = candidatesOf(packetFixture({ turns: ["ok"], previousBoundary: previousBoundary("[s1] @ada: The venue is Quinta.") }));
    expect(kept.map((c) => [c.turnId, c.text, c.carried, [...c.fact.subjects]])).toEqual([["s1", "[s1] @ada: The venue is Quinta.", true, ["quinta"]]]);
  });
});

describe("openThreadsOf", () => {
  it("lists a user's question that no reply followed by its last question sentence, unless that says nothing, the newest three", () => {
    expect(openThreadsOf(packetFixture({ turns: ["Budget is 4,000 EUR?", { text: "Noted.", role: "assistant" }, "Who books the hotel?"] }))).toEqual(["@ada asked: Who books the hotel?"]);
    // "Really?" is the third turn's last question and says nothing, and "ok?" neither: neither is listed.
    const many = ["First topic alpha?", "Second topic beta?", "Fine. Third topic gamma? Really?", "Fourth topic delta?", "ok?"];
    expect(openThreadsOf(packetFixture({ turns: many }))).toEqual(["@ada asked: First topic alpha?", "@ada asked: Second topic beta?", "@ada asked: Fourth topic delta?"]);
    expect(openThreadsOf(packetFixture({ turns: [...many, "Fifth topic epsilon?"] }))).toEqual(["@ada asked: Second topic beta?", "@ada asked: Fourth topic delta?", "@ada asked: Fifth topic epsilon?"]);
    expect(openThreadsOf(packetFixture({ turns: ["Not a question.", { text: "What next?", role: "assistant" }] }))).toEqual([]);
  });
});
