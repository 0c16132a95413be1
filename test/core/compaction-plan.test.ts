import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Group, PlanFailureCode, TailCut } from "../../src/core/compaction-plan";
import { cutTail, frontierStartSeq, groupTurns, preflight, turnChars } from "../../src/core/compaction-plan";
import type { CompactionPolicy } from "../../src/core/declarations";
import type { Turn } from "../../src/core/reconstruction";
import { renderTurn } from "../../src/core/render";
import { ADA, BOB, turn } from "./event-builders";

type CutPolicy = Pick<CompactionPolicy, "retainInputChars" | "maxFrozenChars" | "maxFrozenEvents">;
type CutResult = ReturnType<typeof cutTail>;

const RUNS = { numRuns: 200 };

// ---------------------------------------------------------------------------------------------
// Helpers

/** A group that stands for `chars` characters; its turns do not matter to the cut. */
const group = (seq: number, chars: number): Group => ({ seq, turns: [], chars });

/** Groups with the given sizes, oldest first, at seqs 1, 2, 3, … */
const groupsOf = (sizes: readonly number[]): Group[] => sizes.map((chars, index) => group(index + 1, chars));

const oneEventEach = (): number => 1;

/** `eventsOf` from a table of event counts by group seq (1 when a seq is not listed). */
const eventsBySeq =
  (counts: Readonly<Record<number, number>>) =>
  (g: Group): number =>
    counts[g.seq] ?? 1;

const sum = (values: readonly number[]): number => values.reduce((total, v) => total + v, 0);
const charsOf = (groups: readonly Group[]): number => sum(groups.map((g) => g.chars));
const seqsOf = (groups: readonly Group[]): number[] => groups.map((g) => g.seq);

function expectCut(result: CutResult): TailCut {
  if (!result.ok) throw new Error(`expected a cut, got ${result.error.code}: ${result.error.message}`);
  return result.value;
}

function expectFailure(result: CutResult): PlanFailureCode {
  if (result.ok) throw new Error(`expected a failure, got frozen ${seqsOf(result.value.frozen).join(",")}`);
  return result.error.code;
}

// ---------------------------------------------------------------------------------------------
// Reference models, written from the contract rather than from the code.

/** Index where the retained tail starts: the longest suffix of whole groups within `retain`. */
function referenceTailStart(groups: readonly Group[], retain: number): number {
  for (let start = 0; start <= groups.length; start++) {
    if (charsOf(groups.slice(start)) <= retain) return start;
  }
  return groups.length;
}

type ReferenceCut = { ok: true; frozen: Group[]; tail: Group[] } | { ok: false; code: PlanFailureCode };

function referenceCut(groups: readonly Group[], policy: CutPolicy, eventsOf: (g: Group) => number): ReferenceCut {
  const newest = groups.at(-1);
  if (newest !== undefined && newest.chars > policy.retainInputChars) return { ok: false, code: "tail_group_too_large" };
  const eligible = groups.slice(0, referenceTailStart(groups, policy.retainInputChars));
  if (eligible.length === 0) return { ok: false, code: "nothing_to_freeze" };
  // The longest prefix of the eligible groups within both bounds.
  let count = 0;
  for (let n = 1; n <= eligible.length; n++) {
    const prefix = eligible.slice(0, n);
    if (charsOf(prefix) > policy.maxFrozenChars || sum(prefix.map(eventsOf)) > policy.maxFrozenEvents) break;
    count = n;
  }
  if (count === 0) return { ok: false, code: "frozen_prefix_too_large" };
  return { ok: true, frozen: groups.slice(0, count), tail: groups.slice(count) };
}

function referenceFrontier(groups: readonly Group[], trigger: number): number {
  for (let start = groups.length - 1; start >= 0; start--) {
    if (charsOf(groups.slice(start)) >= trigger) return groups[start]?.seq ?? -1;
  }
  return groups[0]?.seq ?? 0;
}

// ---------------------------------------------------------------------------------------------
// Generators

/** Groups at strictly increasing seqs (a source opens each one), with random sizes. */
const groupsArb = (maxChars: number, maxLength = 20): fc.Arbitrary<Group[]> =>
  fc.array(fc.record({ gap: fc.integer({ min: 1, max: 4 }), chars: fc.nat({ max: maxChars }) }), { maxLength }).map((specs) => {
    let seq = 0;
    return specs.map(({ gap, chars }) => {
      seq += gap;
      return group(seq, chars);
    });
  });

/** A case for `cutTail`: groups, an event count for each, and bounds sized so every outcome occurs. */
const cutCaseArb = groupsArb(300).chain((groups) =>
  fc.record({
    groups: fc.constant(groups),
    events: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: groups.length, maxLength: groups.length }),
    policy: fc.record({
      retainInputChars: fc.nat({ max: 700 }),
      maxFrozenChars: fc.integer({ min: 1, max: 1_500 }),
      maxFrozenEvents: fc.integer({ min: 1, max: 30 }),
    }),
  }),
);

/** `eventsOf` for a generated case: the nth group stands for `events[n]` events. */
function eventsFor(groups: readonly Group[], events: readonly number[]): (g: Group) => number {
  return (g) => {
    const index = groups.indexOf(g);
    const count = events[index];
    if (count === undefined) throw new Error(`eventsOf called with a group that is not in the input (seq ${g.seq})`);
    return count;
  };
}

/** Turns in canonical order: groups ascending, each opened by at most one user turn, replies after it. */
const canonicalTurnsArb: fc.Arbitrary<Turn[]> = fc
  .array(
    fc.record({
      gap: fc.integer({ min: 1, max: 3 }),
      hasSource: fc.boolean(),
      sourceText: fc.string({ maxLength: 20 }),
      author: fc.constantFrom(ADA, BOB, { id: "u:nameless" }, { id: "u:handle", username: "handle" }),
      replies: fc.array(fc.string({ unit: "grapheme", maxLength: 20 }), { maxLength: 3 }),
    }),
    { maxLength: 12 },
  )
  .map((specs) => {
    let seq = 0;
    const turns: Turn[] = [];
    for (const spec of specs) {
      seq += spec.gap + spec.replies.length;
      const groupSeq = seq - spec.replies.length;
      if (spec.hasSource) turns.push(turn(`s${groupSeq}`, groupSeq, spec.sourceText, { author: spec.author }));
      spec.replies.forEach((text, index) => turns.push(turn(`p${groupSeq + index + 1}`, groupSeq, text)));
    }
    return turns;
  });

// ---------------------------------------------------------------------------------------------

describe("turnChars", () => {
  it.each([
    { name: "user turn: author name, colon, space, text", t: turn("s1", 1, "hello"), chars: "Ada: hello".length },
    { name: "user turn without a name: @username", t: turn("s1", 1, "hi", { author: { id: "u:x", username: "x" } }), chars: 6 },
    { name: "user turn with neither: the author id", t: turn("s1", 1, "hi", { author: { id: "u:x" } }), chars: 7 },
    { name: "assistant turn: the bare text", t: turn("p2", 1, "hi Ada"), chars: 6 },
    { name: "empty assistant turn", t: turn("p2", 1, ""), chars: 0 },
    // An emoji outside the BMP is two UTF-16 code units: what is counted is the JavaScript length.
    { name: "astral characters count as two", t: turn("s1", 1, "ok 👍"), chars: 10 },
  ])("$name", ({ t, chars }) => {
    expect(turnChars(t)).toBe(chars);
    expect(turnChars(t)).toBe(renderTurn(t).content.length);
  });
});

describe("groupTurns", () => {
  it("returns no groups for no turns", () => {
    expect(groupTurns([])).toEqual([]);
  });

  it("keeps a source and its replies together, in order, with their rendered characters", () => {
    const turns = [
      turn("s1", 1, "hello"), // "Ada: hello" = 10
      turn("p2", 1, "hi"), // 2
      turn("s3", 3, "question?", { author: BOB }), // "Bob: question?" = 14
      turn("p4", 3, "answer"), // 6
      turn("p5", 3, "and more"), // 8
      turn("s6", 6, "bye"), // "Ada: bye" = 8
    ];
    const groups = groupTurns(turns);
    expect(groups.map((g) => [g.seq, g.turns.map((t) => t.id), g.chars])).toEqual([
      [1, ["s1", "p2"], 12],
      [3, ["s3", "p4", "p5"], 28],
      [6, ["s6"], 8],
    ]);
  });

  it("makes group 0 (replies before any source) a group of its own", () => {
    const groups = groupTurns([turn("p1", 0, "early"), turn("s3", 3, "first")]);
    expect(groups.map((g) => [g.seq, g.chars])).toEqual([
      [0, 5],
      [3, 10],
    ]);
  });

  it("groups only consecutive turns: a group number that reappears later opens a new group", () => {
    // Input must be in canonical order; out-of-order input is not silently merged or reordered.
    const groups = groupTurns([turn("s1", 1, "a"), turn("s2", 2, "b"), turn("p3", 1, "c")]);
    expect(groups.map((g) => [g.seq, g.turns.map((t) => t.id)])).toEqual([
      [1, ["s1"]],
      [2, ["s2"]],
      [1, ["p3"]],
    ]);
  });

  it("property: concatenating the groups gives back the turns; each group is one run of one group number", () => {
    fc.assert(
      fc.property(canonicalTurnsArb, (turns) => {
        const groups = groupTurns(turns);
        const flattened = groups.flatMap((g) => g.turns);
        expect(flattened).toHaveLength(turns.length);
        flattened.forEach((t, index) => expect(t).toBe(turns[index]));
        for (const g of groups) {
          expect(g.turns.length).toBeGreaterThan(0);
          expect(g.turns.every((t) => t.group === g.seq)).toBe(true);
          expect(g.chars).toBe(sum(g.turns.map((t) => renderTurn(t).content.length)));
        }
        groups.slice(1).forEach((g, index) => expect(g.seq).toBeGreaterThan(groups[index]?.seq ?? Number.POSITIVE_INFINITY));
        expect(groups).toHaveLength(new Set(turns.map((t) => t.group)).size);
        expect(charsOf(groups)).toBe(sum(turns.map(turnChars)));
      }),
      RUNS,
    );
  });
});

describe("frontierStartSeq", () => {
  const trigger = { triggerInputChars: 100 };

  it.each([
    { name: "no groups: 0", groups: [] as Group[], seq: 0 },
    { name: "all groups when they stay below the trigger", groups: [group(1, 30), group(4, 30), group(7, 39)], seq: 1 },
    { name: "all groups when together they exactly reach it", groups: [group(1, 30), group(4, 30), group(7, 40)], seq: 1 },
    { name: "the oldest of the newest groups that exactly reach it", groups: [group(1, 50), group(4, 60), group(7, 40)], seq: 4 },
    { name: "one group short of the trigger takes one more", groups: [group(1, 50), group(4, 59), group(7, 40)], seq: 1 },
    { name: "the newest group alone when it reaches the trigger", groups: [group(1, 10), group(2, 150)], seq: 2 },
    { name: "a single group below the trigger", groups: [group(9, 1)], seq: 9 },
    { name: "group 0 counts like any other", groups: [group(0, 60), group(3, 50)], seq: 0 },
  ])("$name", ({ groups, seq }) => {
    expect(frontierStartSeq(groups, trigger)).toBe(seq);
  });

  it("property: the shortest suffix of whole groups reaching the trigger, else every group", () => {
    fc.assert(
      fc.property(groupsArb(200), fc.integer({ min: 1, max: 2_000 }), (groups, triggerInputChars) => {
        const seq = frontierStartSeq(groups, { triggerInputChars });
        expect(seq).toBe(referenceFrontier(groups, triggerInputChars));
        if (groups.length === 0) return;
        const start = groups.findIndex((g) => g.seq === seq);
        expect(start).toBeGreaterThanOrEqual(0);
        // The suffix after the start does not reach the trigger: nothing newer could have started it.
        expect(charsOf(groups.slice(start + 1))).toBeLessThan(triggerInputChars);
        if (start > 0) expect(charsOf(groups.slice(start))).toBeGreaterThanOrEqual(triggerInputChars);
      }),
      RUNS,
    );
  });
});

describe("preflight", () => {
  it.each([
    { activeChars: 0, action: "skip" },
    { activeChars: 79_999, action: "skip" },
    { activeChars: 80_000, action: "plan" },
    { activeChars: 80_001, action: "plan" },
    { activeChars: 2_000_000, action: "plan" },
  ])("$activeChars characters against an 80,000 trigger: $action", ({ activeChars, action }) => {
    expect(preflight(activeChars, { triggerInputChars: 80_000 })).toEqual({ action, activeChars });
  });

  it("property: plans exactly when the active characters reach the trigger", () => {
    fc.assert(
      fc.property(fc.nat({ max: 3_000_000 }), fc.integer({ min: 100, max: 2_000_000 }), (activeChars, triggerInputChars) => {
        const decision = preflight(activeChars, { triggerInputChars });
        expect(decision.activeChars).toBe(activeChars);
        expect(decision.action).toBe(activeChars >= triggerInputChars ? "plan" : "skip");
      }),
      RUNS,
    );
  });
});

describe("cutTail: examples", () => {
  const policy: CutPolicy = { retainInputChars: 100, maxFrozenChars: 1_000, maxFrozenEvents: 100 };

  it.each([
    { name: "keeps the newest groups within the tail target and freezes the rest", sizes: [50, 50, 50, 50], frozen: [1, 2], tail: [3, 4] },
    { name: "a newest group of exactly the target fits the tail", sizes: [10, 100], frozen: [1], tail: [2] },
    { name: "groups summing exactly to the target all fit the tail", sizes: [1, 60, 40], frozen: [1], tail: [2, 3] },
    { name: "one character over the target pushes a group out of the tail", sizes: [1, 61, 40], frozen: [1, 2], tail: [3] },
    // The tail is a suffix: a small old group is not pulled back past a larger one that did not fit.
    { name: "the tail never skips a group to take an older smaller one", sizes: [5, 90, 20], frozen: [1, 2], tail: [3] },
    { name: "empty groups ride along", sizes: [0, 30, 0, 100, 0], frozen: [1, 2], tail: [3, 4, 5] },
  ])("$name", ({ sizes, frozen, tail }) => {
    const cut = expectCut(cutTail(groupsOf(sizes), policy, oneEventEach));
    expect(seqsOf(cut.frozen)).toEqual(frozen);
    expect(seqsOf(cut.tail)).toEqual(tail);
    expect(cut.frozenChars).toBe(charsOf(cut.frozen));
    expect(cut.tailChars).toBe(charsOf(cut.tail));
    expect(cut.frozenEvents).toBe(frozen.length);
  });

  it.each([
    { name: "the newest group alone is one character over the target", sizes: [10, 101], code: "tail_group_too_large" },
    { name: "a lone oversized group", sizes: [5_000], code: "tail_group_too_large" },
    { name: "no groups at all", sizes: [], code: "nothing_to_freeze" },
    { name: "everything fits the tail", sizes: [30, 30, 40], code: "nothing_to_freeze" },
    { name: "a single group that fits the tail", sizes: [100], code: "nothing_to_freeze" },
  ] satisfies { name: string; sizes: number[]; code: PlanFailureCode }[])("fails closed: $name → $code", ({ sizes, code }) => {
    expect(expectFailure(cutTail(groupsOf(sizes), policy, oneEventEach))).toBe(code);
  });

  it("never splits the newest group even when most of it would fit", () => {
    const result = cutTail(groupsOf([10, 20, 101]), { ...policy, retainInputChars: 100 }, oneEventEach);
    expect(expectFailure(result)).toBe("tail_group_too_large");
    if (!result.ok) expect(result.error.message).toContain("101");
  });

  it("refuses when even the oldest eligible group alone exceeds maxFrozenChars", () => {
    const result = cutTail(groupsOf([150, 10, 50]), { retainInputChars: 60, maxFrozenChars: 149, maxFrozenEvents: 100 }, oneEventEach);
    expect(expectFailure(result)).toBe("frozen_prefix_too_large");
  });

  it("refuses when even the oldest eligible group alone exceeds maxFrozenEvents", () => {
    const result = cutTail(groupsOf([10, 10, 50]), { retainInputChars: 50, maxFrozenChars: 1_000, maxFrozenEvents: 3 }, eventsBySeq({ 1: 4 }));
    expect(expectFailure(result)).toBe("frozen_prefix_too_large");
  });

  it("freezes a prefix of exactly maxFrozenChars and exactly maxFrozenEvents", () => {
    const cut = expectCut(
      cutTail(groupsOf([60, 40, 50]), { retainInputChars: 50, maxFrozenChars: 100, maxFrozenEvents: 5 }, eventsBySeq({ 1: 2, 2: 3 })),
    );
    expect(seqsOf(cut.frozen)).toEqual([1, 2]);
    expect(cut).toMatchObject({ frozenChars: 100, frozenEvents: 5, tailChars: 50 });
  });

  it("a frozen group of exactly maxFrozenChars fits; one more character does not", () => {
    const bounds = { retainInputChars: 50, maxFrozenChars: 100, maxFrozenEvents: 10 };
    expect(seqsOf(expectCut(cutTail(groupsOf([100, 50]), bounds, oneEventEach)).frozen)).toEqual([1]);
    expect(expectFailure(cutTail(groupsOf([101, 50]), bounds, oneEventEach))).toBe("frozen_prefix_too_large");
  });

  it("catches up on chars: freezes the oldest groups within the bound and leaves the rest exact in the tail", () => {
    const cut = expectCut(
      cutTail(groupsOf([40, 40, 40, 40, 30]), { retainInputChars: 50, maxFrozenChars: 100, maxFrozenEvents: 100 }, oneEventEach),
    );
    expect(seqsOf(cut.frozen)).toEqual([1, 2]);
    expect(seqsOf(cut.tail)).toEqual([3, 4, 5]);
    expect(cut).toMatchObject({ frozenChars: 80, tailChars: 110, frozenEvents: 2 });
  });

  it("catches up on events: the event bound stops the prefix before the char bound does", () => {
    const cut = expectCut(
      cutTail(groupsOf([10, 10, 10, 10, 30]), { retainInputChars: 30, maxFrozenChars: 1_000, maxFrozenEvents: 5 }, () => 2),
    );
    expect(seqsOf(cut.frozen)).toEqual([1, 2]);
    expect(seqsOf(cut.tail)).toEqual([3, 4, 5]);
    expect(cut.frozenEvents).toBe(4);
  });

  it("keeps a source and its replies on the same side of the cut (real turns, grouped)", () => {
    const turns = [
      turn("s1", 1, "x".repeat(40)), // 45
      turn("p2", 1, "y".repeat(30)), // 30 → group 1: 75
      turn("s3", 3, "z".repeat(20)), // 25
      turn("p4", 3, "w".repeat(20)), // 20 → group 3: 45
      turn("s5", 5, "v".repeat(35)), // 40 → group 5: 40
    ];
    const cut = expectCut(cutTail(groupTurns(turns), { retainInputChars: 100, maxFrozenChars: 1_000, maxFrozenEvents: 100 }, (g) => g.turns.length));
    expect(cut.frozen.flatMap((g) => g.turns.map((t) => t.id))).toEqual(["s1", "p2"]);
    expect(cut.tail.flatMap((g) => g.turns.map((t) => t.id))).toEqual(["s3", "p4", "s5"]);
    expect(cut).toMatchObject({ frozenChars: 75, tailChars: 85, frozenEvents: 2 });
  });
});

describe("cutTail: properties", () => {
  it("agrees with the reference model on every outcome", () => {
    fc.assert(
      fc.property(cutCaseArb, ({ groups, events, policy }) => {
        const eventsOf = eventsFor(groups, events);
        const actual = cutTail(groups, policy, eventsOf);
        const expected = referenceCut(groups, policy, eventsOf);
        if (expected.ok) {
          const cut = expectCut(actual);
          expect(seqsOf(cut.frozen)).toEqual(seqsOf(expected.frozen));
          expect(seqsOf(cut.tail)).toEqual(seqsOf(expected.tail));
        } else {
          expect(expectFailure(actual)).toBe(expected.code);
        }
      }),
      RUNS,
    );
  });

  it("frozen ++ tail is the input: order kept, nothing lost, duplicated or split", () => {
    let exercised = 0;
    fc.assert(
      fc.property(cutCaseArb, ({ groups, events, policy }) => {
        const result = cutTail(groups, policy, eventsFor(groups, events));
        fc.pre(result.ok);
        exercised += 1;
        const cut = expectCut(result);
        const joined = [...cut.frozen, ...cut.tail];
        expect(joined).toHaveLength(groups.length);
        // The very same group objects: a group is never rebuilt, trimmed or split.
        joined.forEach((g, index) => expect(g).toBe(groups[index]));
        expect(cut.frozen.length).toBeGreaterThan(0);
        expect(cut.tail.length).toBeGreaterThan(0);
      }),
      RUNS,
    );
    // The precondition must not filter every run away, or the property would hold vacuously.
    expect(exercised).toBeGreaterThan(10);
  });

  it("the frozen prefix stays within maxFrozenChars and maxFrozenEvents, and its totals are exact", () => {
    let exercised = 0;
    fc.assert(
      fc.property(cutCaseArb, ({ groups, events, policy }) => {
        const eventsOf = eventsFor(groups, events);
        const result = cutTail(groups, policy, eventsOf);
        fc.pre(result.ok);
        exercised += 1;
        const cut = expectCut(result);
        expect(cut.frozenChars).toBe(charsOf(cut.frozen));
        expect(cut.frozenEvents).toBe(sum(cut.frozen.map(eventsOf)));
        expect(cut.tailChars).toBe(charsOf(cut.tail));
        expect(cut.frozenChars).toBeLessThanOrEqual(policy.maxFrozenChars);
        expect(cut.frozenEvents).toBeLessThanOrEqual(policy.maxFrozenEvents);
      }),
      RUNS,
    );
    // The precondition must not filter every run away, or the property would hold vacuously.
    expect(exercised).toBeGreaterThan(10);
  });

  it("when not catching up, the tail is the longest suffix within retainInputChars", () => {
    let exercised = 0;
    fc.assert(
      fc.property(cutCaseArb, ({ groups, events, policy }) => {
        const eventsOf = eventsFor(groups, events);
        const eligible = groups.slice(0, referenceTailStart(groups, policy.retainInputChars));
        const catchingUp = charsOf(eligible) > policy.maxFrozenChars || sum(eligible.map(eventsOf)) > policy.maxFrozenEvents;
        fc.pre(!catchingUp);
        const result = cutTail(groups, policy, eventsOf);
        fc.pre(result.ok);
        exercised += 1;
        const cut = expectCut(result);
        expect(cut.frozen).toHaveLength(eligible.length);
        expect(cut.tailChars).toBeLessThanOrEqual(policy.retainInputChars);
        // Longest: the newest frozen group would have pushed the tail over the target.
        const newestFrozen = cut.frozen.at(-1);
        expect(cut.tailChars + (newestFrozen?.chars ?? 0)).toBeGreaterThan(policy.retainInputChars);
      }),
      RUNS,
    );
    // The precondition must not filter every run away, or the property would hold vacuously.
    expect(exercised).toBeGreaterThan(10);
  });

  it("when catching up, the frozen prefix stops exactly where the next group would break a bound", () => {
    let exercised = 0;
    fc.assert(
      fc.property(cutCaseArb, ({ groups, events, policy }) => {
        const eventsOf = eventsFor(groups, events);
        const result = cutTail(groups, policy, eventsOf);
        fc.pre(result.ok);
        const cut = expectCut(result);
        const eligibleCount = referenceTailStart(groups, policy.retainInputChars);
        fc.pre(cut.frozen.length < eligibleCount);
        exercised += 1;
        const next = cut.tail[0];
        if (next === undefined) throw new Error("a catching-up cut must leave eligible groups in the tail");
        const breaksChars = cut.frozenChars + next.chars > policy.maxFrozenChars;
        const breaksEvents = cut.frozenEvents + eventsOf(next) > policy.maxFrozenEvents;
        expect(breaksChars || breaksEvents).toBe(true);
      }),
      RUNS,
    );
    // The precondition must not filter every run away, or the property would hold vacuously.
    expect(exercised).toBeGreaterThan(10);
  });

  it("fails with tail_group_too_large exactly when the newest group alone exceeds the target", () => {
    fc.assert(
      fc.property(cutCaseArb, ({ groups, events, policy }) => {
        const result = cutTail(groups, policy, eventsFor(groups, events));
        const newest = groups.at(-1);
        const tooLarge = newest !== undefined && newest.chars > policy.retainInputChars;
        expect(!result.ok && result.error.code === "tail_group_too_large").toBe(tooLarge);
      }),
      RUNS,
    );
  });

  it("fails with frozen_prefix_too_large only when the oldest group alone exceeds a frozen bound", () => {
    let exercised = 0;
    fc.assert(
      fc.property(cutCaseArb, ({ groups, events, policy }) => {
        const eventsOf = eventsFor(groups, events);
        const result = cutTail(groups, policy, eventsOf);
        fc.pre(!result.ok && result.error.code === "frozen_prefix_too_large");
        exercised += 1;
        const oldest = groups[0];
        if (oldest === undefined) throw new Error("frozen_prefix_too_large with no groups");
        expect(oldest.chars > policy.maxFrozenChars || eventsOf(oldest) > policy.maxFrozenEvents).toBe(true);
      }),
      RUNS,
    );
    // The precondition must not filter every run away, or the property would hold vacuously.
    expect(exercised).toBeGreaterThan(10);
  });

  it("reservation at the limit: a newest group of exactly retain chars fits the tail, retain + 1 does not", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100_000 }),
        fc.array(fc.integer({ min: 1, max: 1_000 }), { minLength: 1, maxLength: 5 }),
        (retain, older) => {
          const bounds = { retainInputChars: retain, maxFrozenChars: 4_000_000, maxFrozenEvents: 20_000 };
          const exact = cutTail(groupsOf([...older, retain]), bounds, oneEventEach);
          const cut = expectCut(exact);
          expect(seqsOf(cut.tail)).toEqual([older.length + 1]);
          expect(cut.tailChars).toBe(retain);
          expect(seqsOf(cut.frozen)).toEqual(older.map((_, index) => index + 1));
          expect(expectFailure(cutTail(groupsOf([...older, retain + 1]), bounds, oneEventEach))).toBe("tail_group_too_large");
        },
      ),
      RUNS,
    );
  });

  it("reservation at the limit: a tail summing to exactly retain keeps every group, one more char drops the oldest", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 5_000 }), { minLength: 2, maxLength: 6 }),
        fc.integer({ min: 1, max: 5_000 }),
        (tailSizes, oldest) => {
          const retain = sum(tailSizes);
          const bounds = { retainInputChars: retain, maxFrozenChars: 4_000_000, maxFrozenEvents: 20_000 };
          const cut = expectCut(cutTail(groupsOf([oldest, ...tailSizes]), bounds, oneEventEach));
          expect(cut.tail).toHaveLength(tailSizes.length);
          expect(cut.tailChars).toBe(retain);
          const over = expectCut(cutTail(groupsOf([oldest, ...tailSizes]), { ...bounds, retainInputChars: retain - 1 }, oneEventEach));
          expect(over.tail).toHaveLength(tailSizes.length - 1);
          expect(seqsOf(over.frozen)).toEqual([1, 2]);
        },
      ),
      RUNS,
    );
  });
});

describe("cutTail under the agent's own caps", () => {
  const policy = { retainInputChars: 1_000, maxFrozenChars: 10_000, maxFrozenEvents: 1_000 };

  it("retains no more than the caps allow, in characters or in messages, and always the newest group", () => {
    const groups = groupsOf([50, 50, 50, 50, 50]);
    expect(seqsOf(expectCut(cutTail(groups, policy, oneEventEach, { chars: 120, messages: 100 })).tail)).toEqual([4, 5]);
    expect(seqsOf(expectCut(cutTail(groups, policy, oneEventEach, { chars: 10, messages: 100 })).tail)).toEqual([5]);
    // A tail exactly at the character cap is within it.
    expect(seqsOf(expectCut(cutTail(groups, policy, oneEventEach, { chars: 100, messages: 100 })).tail)).toEqual([4, 5]);
    expect(seqsOf(expectCut(cutTail(groups, policy, oneEventEach, { chars: 99, messages: 100 })).tail)).toEqual([5]);
    const talkative = [turn("s1", 1, "a"), turn("p2", 1, "b"), turn("s3", 3, "c"), turn("p4", 3, "d"), turn("s5", 5, "e"), turn("p6", 5, "f")];
    expect(seqsOf(expectCut(cutTail(groupTurns(talkative), policy, oneEventEach, { chars: 1_000, messages: 3 })).tail)).toEqual([5]);
    expect(seqsOf(expectCut(cutTail(groupTurns(talkative), policy, oneEventEach, { chars: 1_000, messages: 4 })).tail)).toEqual([3, 5]);
  });

  it("without caps, cuts exactly as before", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 400 }), { maxLength: 20 }), (sizes) => {
        const groups = groupsOf(sizes);
        expect(cutTail(groups, policy, oneEventEach, { chars: Number.MAX_SAFE_INTEGER, messages: Number.MAX_SAFE_INTEGER })).toEqual(cutTail(groups, policy, oneEventEach));
      }),
      RUNS,
    );
  });
});

describe("cutTail: what a failure says", () => {
  it("names the sizes and bounds that refused the plan", () => {
    const bounds = { retainInputChars: 100, maxFrozenChars: 80, maxFrozenEvents: 3 };
    expect(cutTail(groupsOf([10, 101]), bounds, oneEventEach)).toEqual({
      ok: false,
      error: { code: "tail_group_too_large", message: "the newest group has 101 characters, more than the 100-character tail target" },
    });
    expect(cutTail(groupsOf([81, 50]), bounds, eventsBySeq({ 1: 2 }))).toEqual({
      ok: false,
      error: {
        code: "frozen_prefix_too_large",
        message: "the oldest uncovered group (81 characters, 2 events) exceeds the frozen-prefix bounds (80, 3)",
      },
    });
    expect(cutTail(groupsOf([50]), bounds, oneEventEach)).toEqual({
      ok: false,
      error: { code: "nothing_to_freeze", message: "every uncovered group fits the tail; there is nothing to compact" },
    });
  });
});
