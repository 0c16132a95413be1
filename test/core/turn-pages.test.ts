import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { reconstruct } from "../../src/core/reconstruction";
import type { StoredEvent } from "../../src/core/events";
import type { ReconstructionPolicy, Turn } from "../../src/core/reconstruction";
import type { PageResult, SliceRange } from "../../src/core/turn-pages";
import { idsNamedBy, LogIndex, pageOfTurns, turnsAsOf } from "../../src/core/turn-pages";
import { source, storeAll } from "./event-builders";
import { inputArbOver, policyArb } from "./log-arbitraries";

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);
/** Logs with many groups and colliding ids, and two points in them. */
const logWithPoints = fc
  .array(inputArbOver(ids("m", 10), ids("p", 8)), { maxLength: 70, size: "max" })
  .map((inputs) => storeAll(inputs))
  .chain((log) =>
    fc.record({
      log: fc.constant(log),
      after: fc.integer({ min: 0, max: log.length }),
      through: fc.integer({ min: 0, max: log.length }),
      policy: policyArb,
    }),
  );

describe("turnsAsOf", () => {
  it("gives the turns after a point exactly as folding the whole log up to another point does", () => {
    fc.assert(
      fc.property(logWithPoints, ({ log, after, through, policy }) => {
        const expected = reconstruct(log.filter((event) => event.seq <= through), policy).filter((turn) => turn.group > after);
        expect(turnsAsOf(new LogIndex(log), policy, after, through)).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it("gives a slice's groups from what `slice` reads, with or without other events of the log beside it", () => {
    let shortened = 0;
    fc.assert(
      fc.property(logWithPoints, fc.nat(), fc.array(fc.nat(), { maxLength: 20 }), fc.integer({ min: 1, max: 8 }), ({ log, after: a, through: b, policy }, g, picks, step) => {
        // Mostly a slice well inside the log's prefix at `through`; sometimes one that reaches past it.
        const [after, through] = [Math.min(a, b), Math.max(a, b)];
        const groupsThrough = after + (g % (through - after + 2));
        const expected = reconstruct(log.filter((event) => event.seq <= through), policy).filter((turn) => turn.group > after && turn.group <= groupsThrough);
        // Steps short for logs this small, so reads stop short of `through` and widen.
        const read = new LogIndex(log).slice({ after, groupsThrough, through }, step);
        if (log.some((event) => event.seq > after && event.seq <= through && !read.includes(event))) shortened += 1;
        // Nothing read twice, and nothing after `through`.
        expect(new Set(read.map((event) => event.seq)).size).toBe(read.length);
        expect(read.filter((event) => event.seq > through)).toEqual([]);
        expect(turnsAsOf(new LogIndex(read), policy, after, through, groupsThrough)).toEqual(expected);
        // An audit reads several slices into one index: events another slice read change nothing.
        const others = picks.flatMap((pick) => log.filter((event) => event.seq <= through).slice(pick % Math.max(1, through), (pick % Math.max(1, through)) + 3));
        expect(turnsAsOf(new LogIndex([...new Map([...read, ...others].map((event) => [event.seq, event])).values()]), policy, after, through, groupsThrough)).toEqual(expected);
      }),
      { numRuns: 1_000 },
    );
    // About a quarter of the slices stop short of `through` (236 of 1,000 when written): the
    // property is about reads that skip part of the log, not only ones that read all of it.
    expect(shortened).toBeGreaterThan(150);
  });

  it("reads past a slice's groups only until a source opens the next group, however far the log runs on to `through`", () => {
    const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
    // 400 messages, one a seq, but seq 21 edits message 5 and seq 300 message 6 (their ids re-used).
    const edits = new Map([
      [21, 5],
      [300, 6],
    ]);
    const log = storeAll(upTo(400).map((seq) => source(`m${edits.get(seq) ?? seq}`, `line ${seq}`, { key: `k${seq}` })));
    const seqs = (range: SliceRange) => new LogIndex(log).slice(range).map((event) => event.seq);
    // Groups 1..20: the first read reaches seq 36, which holds seq 22, the next group; of the rest
    // of the log only message 6's edit, which changes group 6.
    expect(seqs({ after: 0, groupsThrough: 20, through: 400 })).toEqual([...upTo(36), 300]);
    expect(seqs({ after: 4, groupsThrough: 5, through: 400 })).toEqual([...upTo(21).slice(4), 300]);
    expect(seqs({ after: 4, groupsThrough: 5, through: 250 })).toEqual(upTo(21).slice(4));
    // When the sources after the groups only edit older messages, the read widens (to 26, 58, then 122) until one opens a group (seq 71).
    const edited = storeAll(upTo(200).map((seq) => source(`m${seq > 10 && seq <= 70 ? ((seq - 1) % 10) + 1 : seq}`, `line ${seq}`, { key: `k${seq}` })));
    expect(new LogIndex(edited).slice({ after: 0, groupsThrough: 10, through: 200 }).map((event) => event.seq)).toEqual(upTo(122));
  });

  it("reads a range by sequence whatever order the log was given in", () => {
    const log = storeAll([]);
    expect(new LogIndex(log).range(0, 10)).toEqual([]);
    const events = storeAll(Array.from({ length: 5 }, (_, i) => ({ kind: "source" as const, idempotencyKey: `k${i}`, sensitive: false, body: { messageId: `m${i}`, author: { id: "a" }, text: `t${i}` } })));
    expect(new LogIndex([...events].reverse()).range(1, 3).map((e) => e.seq)).toEqual([2, 3]);
  });
});

describe("pageOfTurns", () => {
  /**
   * The whole log read a page at a time the way storage reads D1: a window of `windowSize` events
   * after the cursor with the events related to it, widened while the page cannot be decided.
   */
  function readPages(log: readonly StoredEvent[], policy: ReconstructionPolicy, limit: number, windowSize: number): Turn[][] {
    const index = new LogIndex(log);
    const last = log.at(-1)?.seq ?? 0;
    const pages: Turn[][] = [];
    for (let after: number | null = 0; after !== null; ) {
      let page: PageResult = { complete: false };
      for (let size = windowSize; !page.complete; size *= 2) {
        const through = Math.min(after + size, last);
        const window = index.range(after, through);
        const ids = idsNamedBy(window);
        page = pageOfTurns({ window, exhausted: through >= last, related: index.related(ids.messageIds, ids.proposalIds, Number.MAX_SAFE_INTEGER), policy, after, limit });
      }
      pages.push(page.turns);
      after = page.nextAfter;
    }
    return pages;
  }

  it("pages through the log to exactly the whole fold, whole groups per page, at least `limit` turns on every page but the last and no group more than it takes", () => {
    fc.assert(
      fc.property(logWithPoints, fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 8 }), ({ log, policy }, limit, windowSize) => {
        const pages = readPages(log, policy, limit, windowSize);
        // Group 0 (replies before any message) lies before every cursor, as it does for `turnsAsOf`.
        expect(pages.flat()).toEqual(reconstruct(log, policy).filter((turn) => turn.group > 0));
        pages.slice(0, -1).forEach((page, i) => {
          expect(page.length).toBeGreaterThanOrEqual(limit);
          expect(pages[i + 1]?.[0]?.group ?? Infinity).toBeGreaterThan(page.at(-1)?.group ?? 0);
        });
        // And no more than that: `limit` turns, then only the rest of the group the last of them opened.
        for (const page of pages) expect(page.filter((turn) => turn.group !== page.at(-1)?.group).length).toBeLessThan(limit);
      }),
      { numRuns: 300 },
    );
  }, 60_000);

  it("decides a page as soon as the window holds a group after the page's last one, and not before", () => {
    const log = storeAll(Array.from({ length: 10 }, (_, i) => source(`m${i + 1}`, `line ${i + 1}`)));
    const index = new LogIndex(log);
    const policy: ReconstructionPolicy = { admittedAgents: "all", includeSensitive: false };
    const page = (through: number): PageResult => {
      const window = index.range(0, through);
      const ids = idsNamedBy(window);
      return pageOfTurns({ window, exhausted: false, related: index.related(ids.messageIds, ids.proposalIds, through), policy, after: 0, limit: 3 });
    };
    // Through message 4 the fourth group may still gain replies beyond the window: three turns are certain, and a fourth is needed to know the page ends.
    expect(page(4)).toEqual({ complete: false });
    const decided = page(5);
    expect(decided.complete && decided.turns.map((turn) => turn.group)).toEqual([1, 2, 3]);
    expect(decided.complete && decided.nextAfter).toBe(3);
  });
});

