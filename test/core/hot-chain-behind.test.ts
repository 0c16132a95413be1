import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/core/events";
import type { HotChain, WindowBound } from "../../src/durable/hot-chain";
import { TURN_KINDS, caughtUp, eventTextChars, holdPrefix, hotChain, observe, overBound, prefixWithin, readOn, tail, trimWindow, windowBound } from "../../src/durable/hot-chain";
import { storedDeclaration } from "./declaration-fixture";
import { source, storeAll } from "./event-builders";
import { AGENTS, logArb } from "./log-arbitraries";

/**
 * A chain too far behind its log to hold its whole uncovered history holds the oldest part of it
 * and is exactly the chain of a log that ended there: what it plans from is what it would have
 * planned from then. These tests hold the prefix, the reading on and the catching up to the
 * chain loaded fresh over the same events, without I/O.
 */

const declaration = storedDeclaration({ historyAgents: [...AGENTS] });
const activation = { frontierId: "frn_x", frontierHash: "f".repeat(64), startSeq: 1, activatingSeq: 1 };

function loaded(log: readonly StoredEvent[], windowStart: number): HotChain {
  const window = log.filter((e) => e.seq > windowStart && TURN_KINDS.has(e.kind));
  return hotChain({ declaration, activation, head: undefined, openPlan: undefined, windowStart, window, backoffUntil: 0, provisional: false });
}

/** What a chain answers from its window: the exact tail and its totals. */
const view = (chain: HotChain) => ({ window: chain.window, tail: tail(chain), chars: chain.ledger.tailChars, messages: chain.ledger.tailMessages, held: chain.heldChars });

const boundArb: fc.Arbitrary<WindowBound> = fc.record({ events: fc.integer({ min: 1, max: 12 }), chars: fc.integer({ min: 1, max: 80 }) });

describe("a chain behind its log", () => {
  it("held as the oldest part that fits its bound, is the chain of the log cut there, and observes nothing newer", () => {
    fc.assert(
      fc.property(logArb, boundArb, (log, bound) => {
        const chain = loaded(log, 0);
        if (!overBound(chain, bound)) return;
        holdPrefix(chain, bound);
        const behind = chain.behind;
        if (behind === undefined) throw new Error("an over-bound chain is held behind");
        // At most the bound (one event at least), and the oldest events: the log's turn events through `behind`.
        expect(chain.window.length).toBeLessThanOrEqual(Math.max(1, bound.events));
        expect(chain.window.length === 1 || chain.heldChars <= bound.chars).toBe(true);
        expect(view(chain)).toEqual(view(loaded(log.filter((e) => e.seq <= behind), 0)));
        expect(chain.lastSeenSeq).toBe(behind);
        // What the log got after `behind` is not taken in by observing: the chain reads on in order.
        const before = view(chain);
        observe(chain, log.filter((e) => e.seq > behind));
        expect(view(chain)).toEqual(before);
        expect(chain.behind).toBe(behind);
      }),
    );
  });

  it("reads on after a boundary covered part of it, within its bound, and once at the log's end is the chain loaded fresh", () => {
    fc.assert(
      fc.property(logArb, boundArb, fc.nat(30), (log, bound, covered) => {
        const chain = loaded(log, 0);
        if (!overBound(chain, bound)) return;
        holdPrefix(chain, bound);
        const start = Math.min(covered, chain.behind ?? 0);
        trimWindow(chain, start);
        const rest = log.filter((e) => e.seq > chain.lastSeenSeq);
        const taken = readOn(chain, rest, bound);
        const through = chain.behind ?? 0;
        // Within the bound (or the one event a chain always reads on by), and the chain of the log through what it took.
        expect(chain.window.length <= bound.events || chain.window.length === 1).toBe(true);
        expect(view(chain)).toEqual(view(loaded(log.filter((e) => e.seq <= through), start)));
        if (taken < rest.length) {
          // It stopped at an event that does not fit: the next turn event the log holds.
          const next = rest[taken];
          expect(next !== undefined && TURN_KINDS.has(next.kind)).toBe(true);
          expect(prefixWithin([...chain.window, next as StoredEvent], bound)).toBe(chain.window.length);
          return;
        }
        caughtUp(chain);
        expect(view(chain)).toEqual(view(loaded(log, start)));
        // Caught up, it observes again.
        const [next] = storeAll([source("later", "after the catch-up")], (log.at(-1)?.seq ?? 0) + 1);
        if (next === undefined) throw new Error("fixture");
        observe(chain, [next]);
        expect(view(chain)).toEqual(view(loaded([...log, next], start)));
      }),
    );
  });

  it("keeps its held text with its window, however it changes", () => {
    fc.assert(
      fc.property(logArb, fc.nat(30), (log, covered) => {
        const chain = loaded([], 0);
        for (const event of log) observe(chain, [event]);
        trimWindow(chain, Math.min(covered, log.length));
        expect(chain.heldChars).toBe(chain.window.reduce((n, e) => n + eventTextChars(e), 0));
      }),
    );
  });

  it("is bounded by four times what its caps let it hold before it is due, or the deployment's floor, whichever is more", () => {
    const { agent, compactor } = declaration.registration;
    expect(windowBound(declaration, 16_384)).toEqual({ events: Math.max(16_384, 4 * agent.context.maxMessages), chars: Math.max(256 * 16_384, 4 * Math.max(compactor.policy.triggerInputChars, agent.context.maxChars)) });
    expect(windowBound(declaration, 1)).toEqual({ events: 4 * agent.context.maxMessages, chars: 4 * Math.max(compactor.policy.triggerInputChars, agent.context.maxChars) });
  });
});
