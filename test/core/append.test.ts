import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AppendDecision, ExistingEvent, HashedInput } from "../../src/core/append";
import { decideAppend } from "../../src/core/append";
import type { Result } from "../../src/core/errors";
import { eventHash } from "../../src/core/events";
import { CONVERSATION, source } from "./event-builders";

/** An input under `key` whose payload (and so hash) is determined by `text`. */
function item(key: string, text = `text of ${key}`): HashedInput {
  const input = source(`msg-${key}`, text, { key });
  return { input, hash: eventHash(CONVERSATION, input) };
}

const existingOf = (entries: readonly [HashedInput, number][]): Map<string, ExistingEvent> =>
  new Map(entries.map(([i, seq]) => [i.input.idempotencyKey, { seq, hash: i.hash }]));

function decided(result: Result<AppendDecision>): AppendDecision {
  if (!result.ok) throw new Error(`expected a decision, got ${result.error.code}: ${result.error.message}`);
  return result.value;
}

const NONE = new Map<string, ExistingEvent>();

describe("decideAppend: examples", () => {
  it("gives new events consecutive seqs after the head, in input order", () => {
    const items = [item("a"), item("b"), item("c")];
    const decision = decided(decideAppend(items, NONE, 7, undefined));
    expect(decision.outcomes).toEqual([
      { seq: 8, duplicate: false },
      { seq: 9, duplicate: false },
      { seq: 10, duplicate: false },
    ]);
    expect(decision.inserts).toEqual([
      { ...items[0], seq: 8 },
      { ...items[1], seq: 9 },
      { ...items[2], seq: 10 },
    ]);
    expect(decision.lastSeq).toBe(10);
  });

  it("starts an empty conversation at seq 1", () => {
    expect(decided(decideAppend([item("a")], NONE, 0, 0)).outcomes).toEqual([{ seq: 1, duplicate: false }]);
  });

  it("answers a replay (same key, same hash) with the original seq and plans nothing", () => {
    const a = item("a");
    const decision = decided(decideAppend([a], existingOf([[a, 3]]), 5, undefined));
    expect(decision).toEqual({ outcomes: [{ seq: 3, duplicate: true }], inserts: [], lastSeq: 5 });
  });

  it("mixes replays and new events, numbering only the new ones", () => {
    const a = item("a");
    const decision = decided(decideAppend([item("x"), a, item("y")], existingOf([[a, 2]]), 4, 4));
    expect(decision.outcomes).toEqual([
      { seq: 5, duplicate: false },
      { seq: 2, duplicate: true },
      { seq: 6, duplicate: false },
    ]);
    expect(decision.inserts.map((i) => [i.input.idempotencyKey, i.seq])).toEqual([
      ["x", 5],
      ["y", 6],
    ]);
    expect(decision.lastSeq).toBe(6);
  });

  it("refuses a reused key with a different payload: idempotency_conflict, nothing planned", () => {
    const original = item("a", "first");
    const result = decideAppend([item("b"), item("a", "second")], existingOf([[original, 3]]), 5, undefined);
    expect(result).toEqual({
      ok: false,
      error: {
        code: "idempotency_conflict",
        message: expect.stringContaining('"a"'),
        details: { idempotencyKey: "a", index: 1, existingSeq: 3 },
      },
    });
  });

  it("treats a key repeated inside one batch like a replay of the earlier entry", () => {
    const decision = decided(decideAppend([item("a"), item("b"), item("a")], NONE, 0, undefined));
    expect(decision.outcomes).toEqual([
      { seq: 1, duplicate: false },
      { seq: 2, duplicate: false },
      { seq: 1, duplicate: true },
    ]);
    expect(decision.inserts.map((i) => i.seq)).toEqual([1, 2]);
  });

  it("refuses a key repeated inside one batch with a different payload", () => {
    const result = decideAppend([item("a", "one"), item("a", "two")], NONE, 0, undefined);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatchObject({ code: "idempotency_conflict", details: { index: 1 } });
  });

  it.each([
    { expectedSeq: 3, lastSeq: 4 },
    { expectedSeq: 5, lastSeq: 4 },
    { expectedSeq: 0, lastSeq: 1 },
  ])("refuses new events when expectedSeq $expectedSeq ≠ head $lastSeq: sequence_conflict", ({ expectedSeq, lastSeq }) => {
    const result = decideAppend([item("a")], NONE, lastSeq, expectedSeq);
    expect(result).toEqual({
      ok: false,
      error: {
        code: "sequence_conflict",
        message: `expected the conversation at sequence ${expectedSeq}, it is at ${lastSeq}`,
        details: { expectedSeq, currentSeq: lastSeq },
      },
    });
  });

  it("still answers an all-replay request with its originals when expectedSeq is stale", () => {
    const a = item("a");
    const b = item("b");
    const result = decideAppend([a, b], existingOf([[a, 1], [b, 2]]), 9, 0);
    expect(decided(result)).toEqual({
      outcomes: [
        { seq: 1, duplicate: true },
        { seq: 2, duplicate: true },
      ],
      inserts: [],
      lastSeq: 9,
    });
  });

  it("refuses a partly new request with a stale expectedSeq, even though part of it is a replay", () => {
    const a = item("a");
    const result = decideAppend([a, item("b")], existingOf([[a, 1]]), 9, 1);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("sequence_conflict");
  });

  it("reports an idempotency conflict before a sequence conflict", () => {
    const a = item("a", "old");
    const result = decideAppend([item("b"), item("a", "new")], existingOf([[a, 1]]), 9, 0);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("idempotency_conflict");
  });
});

// ---------------------------------------------------------------------------------------------

const KEYS = ["k1", "k2", "k3", "k4", "k5", "k6"] as const;
/** A key with one of two payload variants: repeats and conflicts both happen often. */
const itemArb = fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom("v1", "v2")).map(([key, variant]) => item(key, variant));
const scenarioArb = fc
  .record({
    items: fc.array(itemArb, { minLength: 1, maxLength: 12 }),
    lastSeq: fc.nat({ max: 1_000 }),
    logged: fc.uniqueArray(itemArb, { selector: (i) => i.input.idempotencyKey, maxLength: 4 }),
    stale: fc.option(fc.integer({ min: -3, max: 3 }), { nil: undefined }),
  })
  .map(({ items, lastSeq, logged, stale }) => ({
    items,
    lastSeq,
    // The log's copies sit at distinct seqs in 1..head.
    existing: existingOf(logged.slice(0, lastSeq).map((l, i): [HashedInput, number] => [l, lastSeq - i])),
    expectedSeq: stale === undefined ? undefined : Math.max(0, lastSeq + stale),
  }));

describe("decideAppend: properties", () => {
  it("numbers inserts exactly lastSeq+1..lastSeq+inserts.length, in input order, with unique unknown keys", () => {
    fc.assert(
      fc.property(scenarioArb, ({ items, existing, lastSeq, expectedSeq }) => {
        const result = decideAppend(items, existing, lastSeq, expectedSeq);
        if (!result.ok) return;
        const { inserts, outcomes } = result.value;
        expect(inserts.map((i) => i.seq)).toEqual(inserts.map((_, n) => lastSeq + 1 + n));
        expect(result.value.lastSeq).toBe(lastSeq + inserts.length);
        const keys = inserts.map((i) => i.input.idempotencyKey);
        expect(new Set(keys).size).toBe(keys.length);
        for (const key of keys) expect(existing.has(key)).toBe(false);
        expect(outcomes).toHaveLength(items.length);
        expect(outcomes.filter((o) => !o.duplicate).map((o) => o.seq)).toEqual(inserts.map((i) => i.seq));
      }),
      { numRuns: 200 },
    );
  });

  it("agrees with a simple model of idempotency and optimistic concurrency", () => {
    fc.assert(
      fc.property(scenarioArb, ({ items, existing, lastSeq, expectedSeq }) => {
        // Model: the first payload seen for a key (log first, then the batch) is the record.
        const record = new Map<string, { seq: number; hash: string }>(existing);
        let next = lastSeq;
        let conflictAt: number | undefined;
        const expected: { seq: number; duplicate: boolean }[] = [];
        for (const [index, { input, hash }] of items.entries()) {
          const prior = record.get(input.idempotencyKey);
          if (prior === undefined) {
            next += 1;
            record.set(input.idempotencyKey, { seq: next, hash });
            expected.push({ seq: next, duplicate: false });
          } else if (prior.hash === hash) {
            expected.push({ seq: prior.seq, duplicate: true });
          } else {
            conflictAt = index;
            break;
          }
        }
        const result = decideAppend(items, existing, lastSeq, expectedSeq);
        if (conflictAt !== undefined) {
          expect(result.ok).toBe(false);
          if (!result.ok) expect(result.error).toMatchObject({ code: "idempotency_conflict", details: { index: conflictAt } });
        } else if (next > lastSeq && expectedSeq !== undefined && expectedSeq !== lastSeq) {
          expect(result.ok).toBe(false);
          if (!result.ok) expect(result.error).toMatchObject({ code: "sequence_conflict", details: { expectedSeq, currentSeq: lastSeq } });
        } else {
          expect(decided(result).outcomes).toEqual(expected);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("is idempotent: replaying a successful request against the resulting log returns the same seqs", () => {
    fc.assert(
      fc.property(scenarioArb, ({ items, existing, lastSeq }) => {
        const first = decideAppend(items, existing, lastSeq, lastSeq);
        if (!first.ok) return;
        const logAfter = new Map(existing);
        for (const insert of first.value.inserts) logAfter.set(insert.input.idempotencyKey, { seq: insert.seq, hash: insert.hash });
        // The retry carries the original, now stale, expectedSeq.
        const retry = decided(decideAppend(items, logAfter, first.value.lastSeq, lastSeq));
        expect(retry.inserts).toEqual([]);
        expect(retry.lastSeq).toBe(first.value.lastSeq);
        expect(retry.outcomes.map((o) => o.seq)).toEqual(first.value.outcomes.map((o) => o.seq));
        expect(retry.outcomes.every((o) => o.duplicate)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
