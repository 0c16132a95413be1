import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Group } from "../../src/core/compaction-plan";
import { groupTurns } from "../../src/core/compaction-plan";
import type { NativeMessage } from "../../src/core/render";
import { renderEnvelope, renderTurn } from "../../src/core/render";
import type { Turn } from "../../src/core/reconstruction";
import type { Selection, SelectionInput, SelectionPolicy } from "../../src/core/selection";
import { capPressure, groupsAsOf, selectContext, tailBounds } from "../../src/core/selection";
import { ADA, BOB, turn } from "./event-builders";

const RUNS = { numRuns: 200 };

// ---------------------------------------------------------------------------------------------
// Helpers

const sum = (values: readonly number[]): number => values.reduce((total, v) => total + v, 0);
const charsOf = (messages: readonly NativeMessage[]): number => sum(messages.map((m) => m.content.length));
const groupChars = (groups: readonly Group[]): number => sum(groups.map((g) => g.chars));
const groupMessages = (groups: readonly Group[]): number => sum(groups.map((g) => g.turns.length));
const seqsOf = (groups: readonly Group[]): number[] => groups.map((g) => g.seq);

/** "Ada: " is 5 characters: a user turn by Ada rendering to exactly `chars` characters (≥ 5). */
const USER_PREFIX = "Ada: ".length;
const textFor = (chars: number, fill = "x"): string => fill.repeat(chars - USER_PREFIX);

/**
 * One group at `seq`: a user turn by Ada rendering to `userChars` characters, then replies of the
 * given rendered lengths (a reply renders as its bare text). Built from real turns through
 * `groupTurns`, so `chars` is the rendered length, not a number the test made up.
 */
function exchange(seq: number, userChars: number, replyChars: readonly number[] = []): Group {
  const turns: Turn[] = [turn(`s${seq}`, seq, textFor(userChars)), ...replyChars.map((n, i) => turn(`p${seq + i + 1}`, seq, "r".repeat(n)))];
  const [group, ...rest] = groupTurns(turns);
  if (group === undefined || rest.length > 0) throw new Error("an exchange is exactly one group");
  return group;
}

/** Groups of one user turn each, rendering to the given sizes, oldest first at seqs 10, 20, 30, … */
const groupsOf = (sizes: readonly number[]): Group[] => sizes.map((chars, index) => exchange((index + 1) * 10, chars));

const BOUNDARY = renderEnvelope("boundary", "Ada chose vendor B for invoicing; Bob preferred vendor A on price.");
const AMENDMENT = renderEnvelope("amendment", "- [s12] (user) now reads: vendor B, final.");
const ENVELOPES: readonly NativeMessage[] = [BOUNDARY, AMENDMENT];
const RESERVED = charsOf(ENVELOPES);

function expectSelection(result: ReturnType<typeof selectContext>): Selection {
  if (!result.ok) throw new Error(`expected a selection, got ${result.error.code}: ${result.error.message}`);
  return result.value;
}

function expectBudgetExceeded(result: ReturnType<typeof selectContext>): string {
  if (result.ok) throw new Error(`expected context_budget_exceeded, got ${result.value.messages.length} messages`);
  expect(result.error.code).toBe("context_budget_exceeded");
  return result.error.message;
}

// ---------------------------------------------------------------------------------------------
// Reference model, written from the contract rather than from the code.

type ReferenceSelection = { ok: false } | { ok: true; keptFrom: number; messages: NativeMessage[] };

/**
 * Envelopes reserved first; the tail is the suffix of whole groups from the first anchor that fits
 * both budgets. Anchors: the first group, then each group that would carry the groups since the
 * previous anchor past half the tail budget (characters or messages); the end (no tail) is always
 * a candidate. When everything fits, that is everything; otherwise the cut jumps whole segments.
 */
function referenceSelect({ envelopes, groups, policy }: SelectionInput): ReferenceSelection {
  const reservedChars = charsOf(envelopes);
  if (reservedChars > policy.maxChars || envelopes.length > policy.maxMessages) return { ok: false };
  const budgetChars = policy.maxChars - reservedChars;
  const budgetMessages = policy.maxMessages - envelopes.length;
  const anchors: number[] = [];
  let since: Group[] = [];
  groups.forEach((group, i) => {
    const withIt = [...since, group];
    if (i === 0 || groupChars(withIt) > Math.floor(budgetChars / 2) || groupMessages(withIt) > Math.floor(budgetMessages / 2)) {
      anchors.push(i);
      since = [group];
    } else since = withIt;
  });
  anchors.push(groups.length);
  for (const start of anchors) {
    const suffix = groups.slice(start);
    if (groupChars(suffix) <= budgetChars && groupMessages(suffix) <= budgetMessages) {
      return { ok: true, keptFrom: start, messages: [...envelopes, ...suffix.flatMap((g) => g.turns.map(renderTurn))] };
    }
  }
  throw new Error("unreachable: the empty suffix always fits once the envelopes do");
}

// ---------------------------------------------------------------------------------------------
// Generators

/** Groups in canonical order at increasing seqs: a user turn (unless its source was deleted) and replies. */
const groupsArb = (maxGroups = 10): fc.Arbitrary<Group[]> =>
  fc
    .array(
      fc.record({
        gap: fc.integer({ min: 1, max: 3 }),
        hasSource: fc.boolean(),
        text: fc.string({ maxLength: 40 }),
        author: fc.constantFrom(ADA, BOB, { id: "u:nameless" }),
        replies: fc.array(fc.string({ unit: "grapheme", maxLength: 30 }), { maxLength: 3 }),
      }),
      { maxLength: maxGroups },
    )
    .map((specs) => {
      let seq = 0;
      const turns: Turn[] = [];
      for (const spec of specs) {
        seq += spec.gap + spec.replies.length;
        const groupSeq = seq - spec.replies.length;
        const replies = spec.replies.map((text, i) => turn(`p${groupSeq + i + 1}`, groupSeq, text));
        // A group needs at least one turn: a deleted source with no replies leaves no group at all.
        if (spec.hasSource || replies.length === 0) turns.push(turn(`s${groupSeq}`, groupSeq, spec.text, { author: spec.author }));
        turns.push(...replies);
      }
      return groupTurns(turns);
    });

const envelopesArb: fc.Arbitrary<NativeMessage[]> = fc
  .record({ boundary: fc.option(fc.string({ maxLength: 200 }), { nil: undefined }), amendment: fc.option(fc.string({ maxLength: 120 }), { nil: undefined }) })
  .map(({ boundary, amendment }) => [
    ...(boundary === undefined ? [] : [renderEnvelope("boundary", boundary)]),
    ...(amendment === undefined ? [] : [renderEnvelope("amendment", amendment)]),
  ]);

/** A case whose budgets land anywhere from "envelopes do not fit" to "everything fits". */
const caseArb: fc.Arbitrary<SelectionInput> = fc.tuple(envelopesArb, groupsArb()).chain(([envelopes, groups]) => {
  const all = charsOf(envelopes) + groupChars(groups);
  const allMessages = envelopes.length + groupMessages(groups);
  return fc.record({
    envelopes: fc.constant(envelopes),
    groups: fc.constant(groups),
    policy: fc.record({ maxChars: fc.nat({ max: all + 50 }), maxMessages: fc.nat({ max: allMessages + 2 }) }),
  });
});

// ---------------------------------------------------------------------------------------------

describe("selectContext: envelope reservation", () => {
  it("reserves the envelopes' exact characters and message count before the tail", () => {
    const groups = groupsOf([40, 30]);
    const selection = expectSelection(selectContext({ envelopes: ENVELOPES, groups, policy: { maxChars: 10_000, maxMessages: 100 } }));
    expect(selection.reservedChars).toBe(BOUNDARY.content.length + AMENDMENT.content.length);
    expect(selection.reservedMessages).toBe(2);
    expect(selection.totalChars).toBe(selection.reservedChars + 70);
  });

  it("reserves nothing when there are no envelopes", () => {
    const selection = expectSelection(selectContext({ envelopes: [], groups: groupsOf([40]), policy: { maxChars: 40, maxMessages: 1 } }));
    expect(selection).toMatchObject({ reservedChars: 0, reservedMessages: 0, totalChars: 40 });
    expect(seqsOf(selection.tail.groups)).toEqual([10]);
  });

  it.each([
    { name: "envelope characters one over maxChars", policy: { maxChars: RESERVED - 1, maxMessages: 100 } },
    { name: "envelope characters far over maxChars", policy: { maxChars: 10, maxMessages: 100 } },
    { name: "two envelopes, one message slot", policy: { maxChars: 10_000, maxMessages: 1 } },
    { name: "two envelopes, no message slots", policy: { maxChars: 10_000, maxMessages: 0 } },
  ])("fails with context_budget_exceeded when the envelopes alone do not fit: $name", ({ policy }) => {
    const message = expectBudgetExceeded(selectContext({ envelopes: ENVELOPES, groups: groupsOf([10]), policy }));
    // The message names what was needed and what the agent allows.
    expect(message).toContain(String(RESERVED));
    expect(message).toContain(String(policy.maxChars));
  });

  it("fails even with no tail at all when the envelopes do not fit (the summary is never cut)", () => {
    expectBudgetExceeded(selectContext({ envelopes: [BOUNDARY], groups: [], policy: { maxChars: BOUNDARY.content.length - 1, maxMessages: 5 } }));
  });

  it("accepts envelopes that fill maxChars and maxMessages exactly, leaving no room for any tail group", () => {
    const groups = groupsOf([5, 6]);
    const selection = expectSelection(selectContext({ envelopes: ENVELOPES, groups, policy: { maxChars: RESERVED, maxMessages: 2 } }));
    expect(selection.messages).toEqual([...ENVELOPES]);
    expect(selection.tail).toEqual({ groups: [], chars: 0, messages: 0 });
    expect(selection.omitted).toEqual({ groups: 2, chars: 11, throughGroup: 20 });
    expect(selection.totalChars).toBe(RESERVED);
  });
});

describe("selectContext: the exact tail", () => {
  // Sizes oldest first; groups sit at seqs 10, 20, 30, …; the budget is what is left after the envelopes.
  it.each([
    { name: "everything fits", sizes: [10, 20, 30], budget: 60, maxTail: 10, kept: [10, 20, 30] },
    { name: "the oldest group is dropped", sizes: [10, 20, 30], budget: 59, maxTail: 10, kept: [20, 30] },
    { name: "only the newest fits", sizes: [10, 20, 30], budget: 49, maxTail: 10, kept: [30] },
    { name: "not even the newest fits", sizes: [10, 20, 30], budget: 29, maxTail: 10, kept: [] },
    { name: "no groups", sizes: [], budget: 100, maxTail: 10, kept: [] },
    { name: "never skips to an older smaller group", sizes: [5, 5, 100, 5], budget: 20, maxTail: 10, kept: [40] },
    { name: "stops at the first misfit from the end", sizes: [6, 50, 6, 6], budget: 24, maxTail: 10, kept: [30, 40] },
    { name: "the message budget binds before the characters do", sizes: [10, 10, 10], budget: 1_000, maxTail: 2, kept: [20, 30] },
    { name: "no message slots left for a tail", sizes: [10], budget: 1_000, maxTail: 0, kept: [] },
  ])("$name", ({ sizes, budget, maxTail, kept }) => {
    const groups = groupsOf(sizes);
    const selection = expectSelection(selectContext({ envelopes: ENVELOPES, groups, policy: { maxChars: RESERVED + budget, maxMessages: 2 + maxTail } }));
    expect(seqsOf(selection.tail.groups)).toEqual(kept);
    const dropped = groups.slice(0, groups.length - kept.length);
    expect(selection.omitted).toEqual({ groups: dropped.length, chars: groupChars(dropped), throughGroup: dropped.at(-1)?.seq ?? null });
    expect(selection.tail.chars).toBe(groupChars(selection.tail.groups));
    expect(selection.tail.messages).toBe(groupMessages(selection.tail.groups));
  });

  it("never splits a group: a source and its replies are kept or dropped together", () => {
    // Newest group: a 10-char question and two 7-char replies (24 chars, 3 messages).
    const groups = [exchange(10, 8), exchange(20, 10, [7, 7])];
    const chars = (maxChars: number, maxMessages = 100) =>
      expectSelection(selectContext({ envelopes: [], groups, policy: { maxChars, maxMessages } }));
    expect(seqsOf(chars(24).tail.groups)).toEqual([20]);
    // One character short of the whole group: its first two turns (17 chars) would fit, but the group is not split.
    expect(chars(23).tail.groups).toEqual([]);
    expect(chars(23).messages).toEqual([]);
    // Two message slots: the newest group needs three.
    expect(chars(1_000, 2).tail.groups).toEqual([]);
    expect(seqsOf(chars(1_000, 3).tail.groups)).toEqual([20]);
    expect(seqsOf(chars(1_000, 4).tail.groups)).toEqual([10, 20]);
  });

  it("counts a group's messages as its turns, not as one per group", () => {
    const groups = [exchange(10, 8, [3, 3, 3])];
    const selection = expectSelection(selectContext({ envelopes: [BOUNDARY], groups, policy: { maxChars: 10_000, maxMessages: 5 } }));
    expect(selection.tail.messages).toBe(4);
    expect(selection.messages).toHaveLength(5);
    // Four turns cannot fit the three slots left after the boundary.
    const tight = expectSelection(selectContext({ envelopes: [BOUNDARY], groups, policy: { maxChars: 10_000, maxMessages: 4 } }));
    expect(tight.tail.groups).toEqual([]);
    expect(tight.omitted).toEqual({ groups: 1, chars: groups[0]?.chars, throughGroup: 10 });
  });

  it("keeps a tail that fills maxChars exactly; one character less drops the oldest group", () => {
    const groups = groupsOf([17, 23, 31]);
    const exact = RESERVED + 17 + 23 + 31;
    const full = expectSelection(selectContext({ envelopes: ENVELOPES, groups, policy: { maxChars: exact, maxMessages: 5 } }));
    expect(seqsOf(full.tail.groups)).toEqual([10, 20, 30]);
    expect(full.totalChars).toBe(exact);
    expect(full.omitted).toEqual({ groups: 0, chars: 0, throughGroup: null });

    const short = expectSelection(selectContext({ envelopes: ENVELOPES, groups, policy: { maxChars: exact - 1, maxMessages: 5 } }));
    expect(seqsOf(short.tail.groups)).toEqual([20, 30]);
    expect(short.totalChars).toBe(exact - 17);
    expect(short.omitted).toEqual({ groups: 1, chars: 17, throughGroup: 10 });
  });

  it("keeps a tail that fills maxMessages exactly; one slot less drops the oldest group", () => {
    const groups = [exchange(10, 6, [2]), exchange(20, 6), exchange(30, 6, [2, 2])];
    const full = expectSelection(selectContext({ envelopes: ENVELOPES, groups, policy: { maxChars: 10_000, maxMessages: 2 + 6 } }));
    expect(seqsOf(full.tail.groups)).toEqual([10, 20, 30]);
    expect(full.messages).toHaveLength(8);
    const short = expectSelection(selectContext({ envelopes: ENVELOPES, groups, policy: { maxChars: 10_000, maxMessages: 2 + 5 } }));
    expect(seqsOf(short.tail.groups)).toEqual([20, 30]);
    expect(short.omitted).toEqual({ groups: 1, chars: 8, throughGroup: 10 });
  });

  it("reports the newest dropped group as throughGroup when several are dropped", () => {
    const groups = [exchange(3, 50), exchange(8, 60), exchange(9, 70), exchange(15, 10)];
    const selection = expectSelection(selectContext({ envelopes: [], groups, policy: { maxChars: 75, maxMessages: 10 } }));
    expect(seqsOf(selection.tail.groups)).toEqual([15]);
    expect(selection.omitted).toEqual({ groups: 3, chars: 180, throughGroup: 9 });
  });
});

describe("selectContext: messages", () => {
  it("is the envelopes in order, then every kept turn rendered with renderTurn, oldest first", () => {
    const turns = [
      turn("s4", 4, "Which vendor did we pick?"),
      turn("p5", 4, "Vendor B, for compliance."),
      turn("s6", 6, "And the price?", { author: BOB }),
      turn("p7", 6, "250 EUR more per month."),
    ];
    const groups = groupTurns(turns);
    const selection = expectSelection(selectContext({ envelopes: ENVELOPES, groups, policy: { maxChars: 10_000, maxMessages: 10 } }));
    expect(selection.messages).toEqual([
      BOUNDARY,
      AMENDMENT,
      { role: "user", content: "Ada: Which vendor did we pick?" },
      { role: "assistant", content: "Vendor B, for compliance." },
      { role: "user", content: "Bob: And the price?" },
      { role: "assistant", content: "250 EUR more per month." },
    ]);
    expect(selection.totalChars).toBe(charsOf(selection.messages));
  });

  it("puts the boundary envelope before the amendment envelope exactly as given, both user-role", () => {
    const selection = expectSelection(selectContext({ envelopes: ENVELOPES, groups: [], policy: { maxChars: 10_000, maxMessages: 10 } }));
    expect(selection.messages.map((m) => m.role)).toEqual(["user", "user"]);
    expect(selection.messages[0]?.content).toMatch(/^<untrusted-history-summary kind="boundary">/);
    expect(selection.messages[1]?.content).toMatch(/^<untrusted-history-summary kind="amendment">/);
  });
});

describe("selectContext: properties", () => {
  it("agrees with the reference model: fails exactly when the envelopes do not fit, else keeps the suffix from the first anchor that fits", () => {
    fc.assert(
      fc.property(caseArb, (input) => {
        const result = selectContext(input);
        const reference = referenceSelect(input);
        expect(result.ok).toBe(reference.ok);
        if (!result.ok || !reference.ok) return;
        const selection = result.value;
        expect(seqsOf(selection.tail.groups)).toEqual(seqsOf(input.groups.slice(reference.keptFrom)));
        expect(selection.messages).toEqual(reference.messages);
        const dropped = input.groups.slice(0, reference.keptFrom);
        expect(selection.omitted).toEqual({ groups: dropped.length, chars: groupChars(dropped), throughGroup: dropped.at(-1)?.seq ?? null });
      }),
      RUNS,
    );
  });

  it("totalChars is the sum of the message contents and never exceeds maxChars; messages never exceed maxMessages", () => {
    fc.assert(
      fc.property(caseArb, (input) => {
        const result = selectContext(input);
        if (!result.ok) return;
        const selection = result.value;
        expect(selection.totalChars).toBe(charsOf(selection.messages));
        expect(selection.totalChars).toBeLessThanOrEqual(input.policy.maxChars);
        expect(selection.messages.length).toBeLessThanOrEqual(input.policy.maxMessages);
        expect(selection.reservedChars + selection.tail.chars).toBe(selection.totalChars);
        expect(selection.reservedMessages + selection.tail.messages).toBe(selection.messages.length);
      }),
      RUNS,
    );
  });

  it("omitted ++ tail is exactly the input groups: nothing lost, duplicated or reordered; omitted chars account for the rest", () => {
    fc.assert(
      fc.property(caseArb, (input) => {
        const result = selectContext(input);
        if (!result.ok) return;
        const { tail, omitted } = result.value;
        const dropped = input.groups.slice(0, omitted.groups);
        expect([...dropped, ...tail.groups]).toEqual(input.groups);
        expect(omitted.chars + tail.chars).toBe(groupChars(input.groups));
      }),
      RUNS,
    );
  });

  it("keeps everything that fits, and always the newest group when it fits on its own", () => {
    fc.assert(
      fc.property(caseArb, (input) => {
        const result = selectContext(input);
        if (!result.ok) return;
        const selection = result.value;
        const budgetChars = input.policy.maxChars - selection.reservedChars;
        const budgetMessages = input.policy.maxMessages - selection.reservedMessages;
        if (groupChars(input.groups) <= budgetChars && groupMessages(input.groups) <= budgetMessages) expect(selection.omitted.groups).toBe(0);
        const newest = input.groups.at(-1);
        if (newest !== undefined && newest.chars <= budgetChars && newest.turns.length <= budgetMessages) expect(selection.tail.groups.at(-1)).toEqual(newest);
      }),
      RUNS,
    );
  });

  it("prefix stability: appending a group that still fits keeps the previous messages as a byte-identical prefix", () => {
    const arb = fc
      .record({ envelopes: envelopesArb, groups: groupsArb(8), extra: groupsArb(1), slackChars: fc.nat({ max: 40 }), slackMessages: fc.nat({ max: 3 }) })
      .map(({ envelopes, groups, extra, slackChars, slackMessages }) => {
        // The new group opens after the last existing one.
        const last = groups.at(-1)?.seq ?? 0;
        const appended = extra.map((g) => ({ ...g, seq: g.seq + last, turns: g.turns.map((t) => ({ ...t, group: t.group + last })) }));
        const all = [...groups, ...appended];
        const policy: SelectionPolicy = {
          maxChars: charsOf(envelopes) + groupChars(all) + slackChars,
          maxMessages: envelopes.length + groupMessages(all) + slackMessages,
        };
        return { envelopes, groups, all, policy };
      });
    fc.assert(
      fc.property(arb, ({ envelopes, groups, all, policy }) => {
        const before = expectSelection(selectContext({ envelopes, groups, policy }));
        const after = expectSelection(selectContext({ envelopes, groups: all, policy }));
        expect(after.messages.slice(0, before.messages.length)).toEqual(before.messages);
        // Byte for byte: the serialized prefix is literally the same string.
        const serialize = (ms: readonly NativeMessage[]) => JSON.stringify(ms.map((m) => [m.role, m.content]));
        expect(serialize(after.messages.slice(0, before.messages.length))).toBe(serialize(before.messages));
        expect(after.messages.length - before.messages.length).toBe(groupMessages(all) - groupMessages(groups));
      }),
      RUNS,
    );
  });

  it("prefix stability under any budget: when an appended group drops nothing older, the earlier messages stay the prefix", () => {
    fc.assert(
      fc.property(caseArb, groupsArb(1), (input, extra) => {
        const last = input.groups.at(-1)?.seq ?? 0;
        const appended = extra.map((g) => ({ ...g, seq: g.seq + last, turns: g.turns.map((t) => ({ ...t, group: t.group + last })) }));
        const before = selectContext(input);
        const after = selectContext({ ...input, groups: [...input.groups, ...appended] });
        expect(after.ok).toBe(before.ok);
        if (!before.ok || !after.ok) return;
        const prefixKept = after.value.messages.slice(0, before.value.messages.length);
        if (after.value.omitted.groups === before.value.omitted.groups && after.value.tail.groups.length > before.value.tail.groups.length) {
          expect(prefixKept).toEqual(before.value.messages);
        } else {
          // Otherwise older groups were dropped (or the new one did not fit): the envelopes are still the prefix.
          expect(after.value.messages.slice(0, input.envelopes.length)).toEqual(input.envelopes);
        }
      }),
      RUNS,
    );
  });
});

describe("groupsAsOf: a reply's context as of its source message", () => {
  const groups = groupsOf([20, 30, 40, 50]); // seqs 10, 20, 30, 40

  it("ends at the source's own group and keeps every earlier one", () => {
    for (const source of [10, 20, 30, 40]) {
      const asOf = groupsAsOf(groups, source, 0);
      if (!asOf.ok) throw new Error(asOf.error.reason);
      expect(seqsOf(asOf.value)).toEqual(seqsOf(groups).filter((seq) => seq <= source));
    }
  });

  it("refuses a source the head already covers, and a source that is no longer a turn", () => {
    expect(groupsAsOf(groups, 10, 10)).toEqual({ ok: false, error: { reason: "source_covered", sourceSeq: 10, coveredThroughSeq: 10 } });
    expect(groupsAsOf(groups, 25, 0)).toEqual({ ok: false, error: { reason: "source_absent", sourceSeq: 25 } });
    expect(groupsAsOf([], 5, 0)).toEqual({ ok: false, error: { reason: "source_absent", sourceSeq: 5 } });
  });

  it("never shows a group opened after the source (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 6, max: 200 }), { minLength: 1, maxLength: 30 }), fc.nat(), (sizes, pick) => {
        const all = groupsOf(sizes);
        const source = all[pick % all.length]?.seq ?? 10;
        const asOf = groupsAsOf(all, source, 0);
        if (!asOf.ok) return false;
        return asOf.value.at(-1)?.seq === source && asOf.value.every((g) => g.seq <= source) && asOf.value.length === all.filter((g) => g.seq <= source).length;
      }),
      RUNS,
    );
  });
});

describe("selectContext: cache-aware trimming (successive calls extend the same prefix)", () => {
  /** The kept tail's first group index for each call, as groups arrive one at a time. */
  const startsWhileAppending = (groups: readonly Group[], policy: SelectionPolicy, envelopes: readonly NativeMessage[] = []): number[] =>
    groups.map((_, n) => expectSelection(selectContext({ envelopes, groups: groups.slice(0, n + 1), policy })).omitted.groups);

  it("slides in steps of about half the budget, not one group per call", () => {
    // Thirty 10-character groups against a 100-character tail budget: the old selector dropped the
    // oldest group on every call from the 11th on (20 different prefixes).
    const starts = startsWhileAppending(groupsOf(Array.from({ length: 30 }, () => 10)), { maxChars: 100, maxMessages: 1_000 });
    const moves = starts.filter((s, i) => i > 0 && s !== starts[i - 1]).length;
    expect(moves).toBeLessThanOrEqual(5);
    expect(starts.slice(0, 10).every((s) => s === 0)).toBe(true);
  });

  it("between two moves every response begins with the previous one, byte for byte", () => {
    const groups = groupsOf(Array.from({ length: 40 }, (_, i) => 8 + ((i * 7) % 13)));
    const policy = { maxChars: RESERVED + 150, maxMessages: 1_000 };
    let previous: NativeMessage[] | undefined;
    let previousStart = 0;
    let moves = 0;
    for (let n = 1; n <= groups.length; n++) {
      const selection = expectSelection(selectContext({ envelopes: ENVELOPES, groups: groups.slice(0, n), policy }));
      if (previous !== undefined && selection.omitted.groups === previousStart) expect(selection.messages.slice(0, previous.length)).toEqual(previous);
      if (selection.omitted.groups !== previousStart) moves += 1;
      previous = selection.messages;
      previousStart = selection.omitted.groups;
    }
    expect(moves).toBeLessThanOrEqual(Math.ceil(groupChars(groups) / (0.75 * 75)) + 1);
  });

  it("moves rarely: each move is paid for by at least three quarters of a half-budget of new input (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 40, max: 400 }), fc.array(fc.integer({ min: 5, max: 1_000 }), { minLength: 30, maxLength: 80, size: "max" }), (budget, raw) => {
        const step = Math.floor(budget / 2);
        // Groups no larger than a quarter of the step, so a move always frees at least 3/4 of one.
        const sizes = raw.map((n) => 5 + (n % Math.max(1, Math.floor(step / 4) - 4)));
        const groups = groupsOf(sizes);
        const starts = startsWhileAppending(groups, { maxChars: budget, maxMessages: 10_000 });
        const moves = starts.filter((s, i) => i > 0 && s !== starts[i - 1]).length;
        // Monotone: an appended group never brings back an older one.
        expect(starts.every((s, i) => i === 0 || s >= (starts[i - 1] ?? 0))).toBe(true);
        expect(moves).toBeLessThanOrEqual(Math.floor(groupChars(groups) / (0.75 * step)) + 1);
      }),
      RUNS,
    );
  });

  it("moves only when the previous start no longer fits (property)", () => {
    fc.assert(
      fc.property(caseArb, (input) => {
        const before = selectContext({ ...input, groups: input.groups.slice(0, -1) });
        const after = selectContext(input);
        if (!before.ok || !after.ok) return;
        const kept = input.groups.slice(before.value.omitted.groups);
        const fits = before.value.reservedChars + groupChars(kept) <= input.policy.maxChars && before.value.reservedMessages + groupMessages(kept) <= input.policy.maxMessages;
        if (fits) expect(after.value.omitted.groups).toBe(before.value.omitted.groups);
        else expect(after.value.omitted.groups).toBeGreaterThan(before.value.omitted.groups);
      }),
      RUNS,
    );
  });
});

describe("capPressure and tailBounds: the trigger answers to the agent's caps", () => {
  it.each([
    { active: { chars: 89_999, messages: 299 }, due: false },
    { active: { chars: 90_000, messages: 0 }, due: true },
    { active: { chars: 0, messages: 300 }, due: true },
  ])("at $active.chars chars and $active.messages messages of 120,000 / 400: $due", ({ active, due }) => {
    expect(capPressure(active, { maxChars: 120_000, maxMessages: 400 })).toBe(due);
  });

  it("retains half of maxChars and a quarter of maxMessages, so a settled tail starts well below the point that plans again", () => {
    const caps = { maxChars: 120_000, maxMessages: 400 };
    const bounds = tailBounds(caps);
    expect(bounds).toEqual({ chars: 60_000, messages: 100 });
    expect(capPressure({ chars: bounds.chars, messages: bounds.messages }, caps)).toBe(false);
  });
});

describe("trimStart: a segment that exactly reaches half the budget", () => {
  it("does not open a new anchor, so the tail starts at the next one", () => {
    // Budget 100, so anchors open past 50: at groups 10 (0 chars before), 30 (25+25+25 > 50) and 50.
    // The suffix from 30 (75 chars) is the first that fits; 20 is no anchor, though its suffix (100) would fit.
    const selection = expectSelection(selectContext({ envelopes: [], groups: groupsOf([25, 25, 25, 25, 25]), policy: { maxChars: 100, maxMessages: 100 } }));
    expect(seqsOf(selection.tail.groups)).toEqual([30, 40, 50]);
    expect(selection.omitted).toEqual({ groups: 2, chars: 50, throughGroup: 20 });
  });
});
