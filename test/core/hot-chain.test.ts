import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/core/events";
import { groupsAfter } from "../../src/core/tail-fold";
import type { HotChain } from "../../src/durable/hot-chain";
import { TURN_KINDS, foldPolicy, hotChain, latestSource, observe, observeProvisionally, tail, trimWindow } from "../../src/durable/hot-chain";
import { storedDeclaration } from "./declaration-fixture";
import { delivered, proposal, source, storeAll } from "./event-builders";
import { AGENTS, logArb } from "./log-arbitraries";

/**
 * The hot state is a cache of D1: whatever the object observed and trimmed must be what it would
 * load fresh after waking. These tests hold the operations to that, without I/O.
 */

const declaration = storedDeclaration({ historyAgents: [...AGENTS] });
const activation = { frontierId: "frn_x", frontierHash: "f".repeat(64), startSeq: 1, activatingSeq: 1 };

/** The chain as `chain-book` loads it from D1 with its window starting after `windowStart`. */
function loaded(log: readonly StoredEvent[], windowStart: number): HotChain {
  const window = log.filter((e) => e.seq > windowStart && TURN_KINDS.has(e.kind));
  return hotChain({ declaration, activation, head: undefined, openPlan: undefined, windowStart, window, backoffUntil: 0, provisional: false });
}

const totals = (chain: HotChain) => ({ chars: chain.ledger.tailChars, messages: chain.ledger.tailMessages, lastSeen: chain.lastSeenSeq });

describe("hot chain", () => {
  it("undoes a provisional observation exactly: the chain is the one that never saw the event, and then sees the next one right", () => {
    fc.assert(
      fc.property(logArb, fc.nat(30), (log, cut) => {
        const seen = Math.min(cut, log.length);
        const chain = loaded(log.slice(0, seen), 0);
        const before = { window: [...chain.window], tail: tail(chain), totals: totals(chain) };
        // An event that was never written: the next one the log gets takes its sequence number.
        const unwritten = source(`ghost-${seen}`, "a message the write did not keep");
        const [ghost] = storeAll([unwritten], seen + 1);
        if (ghost === undefined) throw new Error("fixture");
        const drop = observeProvisionally(chain, [ghost]);
        expect(chain.lastSeenSeq).toBe(seen + 1);
        drop();
        expect({ window: chain.window, tail: tail(chain), totals: totals(chain) }).toEqual(before);
        // What the log then holds at that sequence number is folded as if the ghost never was.
        const rest = log.slice(seen);
        for (const event of rest) observe(chain, [event]);
        const fresh = loaded(log, 0);
        expect(tail(chain)).toEqual(tail(fresh));
        // (A chain loaded fresh has seen only the turn-shaping events; one that observed has seen every event.)
        expect({ ...totals(chain), lastSeen: 0 }).toEqual({ ...totals(fresh), lastSeen: 0 });
      }),
    );
  });

  it("a provisional observation of an event already seen undoes to nothing", () => {
    const log = storeAll([source("m1", "one"), source("m2", "two")]);
    const chain = loaded(log, 0);
    const ledger = chain.ledger;
    const drop = observeProvisionally(chain, [log[0] as StoredEvent]);
    drop();
    // Nothing changed, so nothing was rebuilt.
    expect(chain.ledger).toBe(ledger);
  });

  it("observed event by event, then trimmed, is the chain loaded fresh after the trim", () => {
    fc.assert(
      fc.property(logArb, fc.nat(30), (log, cut) => {
        const windowStart = Math.min(cut, log.length);
        const live = loaded([], 0);
        for (const event of log) observe(live, [event]);
        trimWindow(live, windowStart);
        const fresh = loaded(log, windowStart);
        expect(live.window).toEqual(fresh.window);
        expect(tail(live)).toEqual(tail(fresh));
        expect({ ...totals(live), lastSeen: 0 }).toEqual({ ...totals(fresh), lastSeen: 0 });
      }),
    );
  });

  it("serves the exact tail the whole-window fold gives, and the ledger's totals agree with it", () => {
    fc.assert(
      fc.property(logArb, fc.nat(30), (log, cut) => {
        const windowStart = Math.min(cut, log.length);
        const chain = loaded(log, windowStart);
        const groups = tail(chain);
        expect(groups).toEqual(groupsAfter(chain.window, windowStart, foldPolicy(declaration)));
        expect(chain.ledger.tailChars).toBe(groups.reduce((n, g) => n + g.chars, 0));
        expect(chain.ledger.tailMessages).toBe(groups.reduce((n, g) => n + g.turns.length, 0));
      }),
    );
  });

  it("takes in each committed event once, however often it is observed", () => {
    fc.assert(
      fc.property(logArb, (log) => {
        const once = loaded([], 0);
        const twice = loaded([], 0);
        observe(once, log);
        observe(twice, log);
        observe(twice, log.slice(0, Math.floor(log.length / 2)));
        expect(twice.window).toEqual(once.window);
        expect(totals(twice)).toEqual(totals(once));
      }),
    );
  });

  it("cuts the tail as of a source, and knows the newest source it holds", () => {
    const log = storeAll([source("m1", "one"), source("m2", "two"), source("m3", "three")]);
    const chain = loaded(log, 0);
    expect(tail(chain, 2).map((g) => g.seq)).toEqual([1, 2]);
    expect(latestSource(chain)?.seq).toBe(3);
    trimWindow(chain, 3);
    expect(tail(chain)).toEqual([]);
    expect(latestSource(chain)).toBeUndefined();
  });

  it("settles a boundary at the cost of what it covers: nothing it leaves uncovered is folded or hashed again", () => {
    // Compaction fell behind: 2,000 groups of a message, a reply and its delivery wait uncovered,
    // and each settlement covers a few of them. Turn hashes are what a fold computes; the cache
    // is emptied with each trim, so whatever is folded again after it shows up in the cache.
    const groups = 2_000;
    const inputs = Array.from({ length: groups }, (_, i) => [
      source(`m${i}`, `message ${i}`),
      proposal(`p${i}`, "agent-a", `reply ${i}`, { replyTo: `m${i}` }),
      delivered(`p${i}`),
    ]).flat();
    const chain = loaded(storeAll(inputs), 0);
    const served = tail(chain);
    for (let covered = 1; covered <= 5; covered++) {
      trimWindow(chain, covered * 30);
      expect(chain.turnHashes.size).toBe(0);
      // The exact tail the agent is served is the one it had, less what the boundary covers.
      expect(tail(chain)).toEqual(served.slice(covered * 10));
      // A plan as of the newest message, which a reply and its delivery followed: that group without them.
      const newest = latestSource(chain)?.seq ?? 0;
      expect(tail(chain, newest)).toEqual([...served.slice(covered * 10, -1), groupsAfter(chain.window.slice(-3, -2), newest - 1, foldPolicy(declaration))[0]]);
      expect(chain.turnHashes.size).toBe(0);
    }
    expect(chain.ledger.tailMessages).toBe((groups - 50) * 2);
  });
});
