import { describe, expect, it } from "vitest";
import type { PlacedTurn, Window } from "../../src/core/turn-context";
import { lendContext } from "../../src/core/turn-context";

/** A user's message any reader may be served; the fields a case changes are given. */
const turn = (seq: number, text: string, over: Partial<PlacedTurn> = {}): PlacedTurn => ({ seq, live: true, servable: true, lends: true, text, author: "Ada", ...over });

describe("lendContext", () => {
  const places: PlacedTurn[] = [
    turn(1, "far before"),
    turn(2, "have you tried martial arts"),
    turn(3, "a reply", { lends: false, author: "host" }),
    turn(4, "yes kickboxing"),
    turn(5, "secret plans", { lends: false, servable: false }),
    turn(6, "deleted words", { lends: false, servable: false, live: false, text: undefined }),
    turn(7, "far after"),
  ];
  const windowOf = (match: number): Window => ({ match, turns: places });

  it("takes each servable match, then the servable turns within two places of a match that lends, each once", () => {
    const { candidates } = lendContext([windowOf(4), windowOf(2)]);
    expect(candidates.map((c) => c.turn.seq)).toEqual([4, 2, 3, 1]);
  });

  it("lends a turn the words of the live, non-sensitive user messages within two places, never a reply's or its own", () => {
    const { candidates } = lendContext([windowOf(4)]);
    const four = candidates.find((c) => c.turn.seq === 4);
    expect(four?.indexed).toEqual({ author: "Ada", text: "yes kickboxing", grams: "", context: "have you tried martial arts" });
    const reply = candidates.find((c) => c.turn.seq === 3);
    expect(reply?.indexed.context).toBe("far before have you tried martial arts yes kickboxing");
  });

  it("takes no neighbour of a match that does not lend, and no match the reader may not be served", () => {
    expect(lendContext([windowOf(3)]).candidates.map((c) => c.turn.seq)).toEqual([3]);
    expect(lendContext([windowOf(5)]).candidates).toEqual([]);
    expect(lendContext([{ match: 9, turns: places }]).candidates).toEqual([]);
  });

  it("samples every live turn within two places of a match, whoever may read it, for the counts", () => {
    const { sample } = lendContext([windowOf(4)]);
    expect(sample.map((t) => t.text)).toEqual(["have you tried martial arts", "a reply", "yes kickboxing", "secret plans"]);
  });

  it("indexes a text as search-text folds it, grams apart, and the author folded", () => {
    const { candidates } = lendContext([{ match: 1, turns: [turn(1, "پرواز ساعت ٣ 北京", { author: "علي" })] }]);
    expect(candidates[0]?.indexed).toEqual({ author: "علی", text: "پرواز ساعت 3 北京", grams: "北京", context: "" });
  });
});
