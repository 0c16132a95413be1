import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { groupTurns } from "../../src/core/compaction-plan";
import type { StoredEvent } from "../../src/core/events";
import type { ReconstructionPolicy } from "../../src/core/reconstruction";
import { reconstruct } from "../../src/core/reconstruction";
import { groupsAfter, tailEvents } from "../../src/core/tail-fold";
import { TailLedger } from "../../src/core/tail-ledger";
import { delivered, edit, proposal, source, storeAll } from "./event-builders";
import { logArb, policyArb } from "./log-arbitraries";

const EVERYTHING: ReconstructionPolicy = { admittedAgents: "all", includeSensitive: true };
const RUNS = { numRuns: 400 };

/** What the engine computed before the ledger: the whole window folded, grouped and summed. */
function foldedTailChars(window: readonly StoredEvent[], policy: ReconstructionPolicy, windowStart: number): number {
  const turns = reconstruct(tailEvents(window), policy).filter((turn) => turn.group > windowStart);
  return groupTurns(turns).reduce((total, group) => total + group.chars, 0);
}

/** The exact tail's turns (one provider message each), folded the same way. */
function foldedTailMessages(window: readonly StoredEvent[], policy: ReconstructionPolicy, windowStart: number): number {
  return reconstruct(tailEvents(window), policy).filter((turn) => turn.group > windowStart).length;
}

/**
 * The ids outside the window that window events after `absorbedThroughSeq` speak about: corrected
 * or replied-to messages the window does not hold, and delivered or replying proposals it does
 * not hold (or that reply outside it): what the engine scanned the window for before the ledger,
 * and what `TailLedger.references` must equal.
 */
function amendmentReferences(window: readonly StoredEvent[], absorbedThroughSeq: number): { messageIds: string[]; proposalIds: string[] } {
  const windowSources = new Set(window.flatMap((e) => (e.kind === "source" ? [e.body.messageId] : [])));
  const windowProposals = new Set(window.flatMap((e) => (e.kind === "proposal" ? [e.body.proposalId] : [])));
  const messageIds = new Set<string>();
  const proposalIds = new Set<string>();
  for (const event of window) {
    if (event.seq <= absorbedThroughSeq) continue;
    if (event.kind === "correction" && !windowSources.has(event.body.targetMessageId)) messageIds.add(event.body.targetMessageId);
    if (event.kind === "delivery" && !windowProposals.has(event.body.proposalId)) proposalIds.add(event.body.proposalId);
    if (event.kind === "proposal" && event.body.replyToMessageId !== undefined && !windowSources.has(event.body.replyToMessageId)) {
      messageIds.add(event.body.replyToMessageId);
      proposalIds.add(event.body.proposalId);
    }
  }
  return { messageIds: [...messageIds], proposalIds: [...proposalIds] };
}

const sorted = (refs: { messageIds: string[]; proposalIds: string[] }) => ({ messageIds: [...refs.messageIds].sort(), proposalIds: [...refs.proposalIds].sort() });

/** A log and a point in it where the window starts (the head boundary's coverage). */
const windowedLog = logArb.chain((log) => fc.record({ log: fc.constant(log), windowStart: fc.integer({ min: 0, max: log.length }), policy: policyArb }));

/** The ids an event names: the message it is, corrects or answers, the proposal it is or delivers. */
function idsNamed(event: StoredEvent): string[] {
  switch (event.kind) {
    case "source":
      return [event.body.messageId];
    case "correction":
      return [event.body.targetMessageId];
    case "proposal":
      return [event.body.proposalId, ...(event.body.replyToMessageId === undefined ? [] : [event.body.replyToMessageId])];
    case "delivery":
      return [event.body.proposalId];
    case "run":
      return [];
  }
}

describe("TailLedger", () => {
  it("keeps the same tail characters and messages as folding the whole window, after every event", () => {
    fc.assert(
      fc.property(windowedLog, ({ log, windowStart, policy }) => {
        const ledger = new TailLedger(policy, windowStart);
        const window = log.filter((event) => event.seq > windowStart);
        window.forEach((event, i) => {
          ledger.add(event);
          expect(ledger.tailChars).toBe(foldedTailChars(window.slice(0, i + 1), policy, windowStart));
          expect(ledger.tailMessages).toBe(foldedTailMessages(window.slice(0, i + 1), policy, windowStart));
        });
      }),
      RUNS,
    );
  });

  it("names the same outside messages and proposals as scanning the whole window, for every absorbed point", () => {
    fc.assert(
      fc.property(windowedLog, ({ log, windowStart, policy }) => {
        const ledger = new TailLedger(policy, windowStart);
        const window = log.filter((event) => event.seq > windowStart);
        window.forEach((event, i) => {
          ledger.add(event);
          for (let absorbed = windowStart; absorbed <= event.seq; absorbed++) {
            expect(sorted(ledger.references(absorbed))).toEqual(sorted(amendmentReferences(window.slice(0, i + 1), absorbed)));
          }
        });
      }),
      RUNS,
    );
  });

  it("changes its reference version whenever an event could change the amendments derived from its references", () => {
    fc.assert(
      fc.property(windowedLog, ({ log, windowStart, policy }) => {
        const ledger = new TailLedger(policy, windowStart);
        for (const event of log.filter((e) => e.seq > windowStart)) {
          const before = { version: ledger.refVersion, refs: sorted(ledger.references(windowStart)) };
          ledger.add(event);
          if (ledger.refVersion !== before.version) continue;
          // Unchanged version: the same ids, and the new event names none of them, so the events an
          // amendment is derived from are the same as before.
          const after = sorted(ledger.references(windowStart));
          expect(after).toEqual(before.refs);
          const named = new Set([...after.messageIds, ...after.proposalIds]);
          expect(idsNamed(event).filter((id) => named.has(id))).toEqual([]);
        }
      }),
      RUNS,
    );
  });

  it("re-folds only what an event touches: plain messages leave the reference version alone", () => {
    const ledger = new TailLedger(EVERYTHING, 0);
    const events = storeAll([source("m1", "Lisbon in April?"), proposal("p1", "agent-a", "Yes.", { replyTo: "m1" }), delivered("p1"), source("m2", "Twelve people.")]);
    for (const event of events.slice(0, 3)) ledger.add(event);
    const version = ledger.refVersion;
    ledger.add(events[3]!);
    expect(ledger.refVersion).toBe(version);
    expect(ledger.tailChars).toBe(foldedTailChars(events, EVERYTHING, 0));
  });

  it("moves a reply that arrived before its message into that message's group once it arrives", () => {
    const events = storeAll([
      source("m1", "First."),
      proposal("p9", "agent-a", "An answer to m2.", { replyTo: "m2" }),
      delivered("p9"),
      source("m2", "Second."),
      edit("m2", "Second, edited."),
    ]);
    const ledger = new TailLedger(EVERYTHING, 0);
    const seen: number[] = [];
    for (const event of events) {
      ledger.add(event);
      seen.push(ledger.tailChars);
    }
    expect(seen).toEqual(events.map((_, i) => foldedTailChars(events.slice(0, i + 1), EVERYTHING, 0)));
    // Before m2 arrives the reply is not a tail turn (it answers a message the window lacks).
    expect(seen[2]).toBe(seen[0]);
    expect(sorted(ledger.references(0))).toEqual({ messageIds: [], proposalIds: [] });
  });

  it("never gives its reference version back an earlier value, and tracks the newest event added", () => {
    // The engine caches amendments under the head and this version: a version that came back to a
    // value it once had would serve amendments computed before the events in between.
    fc.assert(
      fc.property(windowedLog, ({ log, windowStart, policy }) => {
        const ledger = new TailLedger(policy, windowStart);
        expect(ledger.lastSeq).toBe(windowStart);
        for (const event of log.filter((e) => e.seq > windowStart)) {
          const before = ledger.refVersion;
          ledger.add(event);
          expect(ledger.refVersion).toBeGreaterThanOrEqual(before);
          expect(ledger.lastSeq).toBe(event.seq);
        }
      }),
      RUNS,
    );
  });

  it("moves a proposal id from the reply it kept to an earlier one once that one's message arrives", () => {
    // p1 first answers m2 (not held yet), then is sent again as a plain reply: the fold keeps the
    // second until m2 arrives, then the first, so the id leaves m1's group for m2's.
    const events = storeAll([
      source("m1", "First."),
      proposal("p1", "agent-a", "An answer to m2.", { replyTo: "m2", key: "a" }),
      proposal("p1", "agent-a", "A plain answer, longer than the first one.", { key: "b" }),
      delivered("p1"),
      source("m2", "Second."),
    ]);
    const ledger = new TailLedger(EVERYTHING, 0);
    const seen: [number, number][] = [];
    for (const event of events) {
      ledger.add(event);
      seen.push([ledger.tailChars, ledger.tailMessages]);
    }
    expect(seen).toEqual(events.map((_, i) => [foldedTailChars(events.slice(0, i + 1), EVERYTHING, 0), foldedTailMessages(events.slice(0, i + 1), EVERYTHING, 0)]));
    expect(seen[3]).not.toEqual(seen[4]);
  });

  it("holds a group's replies as a set: trimmed, it lists the same ones as a fresh ledger, whatever order they joined in", () => {
    // p4's plain reply is kept until it leaves the window; then its reply to m1 joins m1's group
    // after p2's, where a fresh ledger hears both from m1's arrival, p4's first (found by the
    // property below, seed 1281564604).
    const events = storeAll([
      proposal("p4", "agent-a", "A plain answer.", { key: "a" }),
      proposal("p4", "agent-a", "An answer to m1.", { replyTo: "m1", key: "b" }),
      proposal("p2", "agent-b", "Another answer to m1.", { replyTo: "m1", key: "c" }),
      source("m1", "First."),
    ]);
    const ledger = new TailLedger(EVERYTHING, 0);
    for (const event of events) ledger.add(event);
    ledger.trim(1, events.slice(0, 1));
    const fresh = new TailLedger(EVERYTHING, 1);
    for (const event of events.slice(1)) fresh.add(event);
    expect(ledger.census().groupProposals).toEqual(["4:p2,p4"]);
    expect(ledger.census()).toEqual(fresh.census());
    expect(ledger.groups()).toEqual(fresh.groups());
  });

  it("trimmed while events keep arriving, is the ledger made fresh over the events left, and goes on as it would", () => {
    // Boundaries settle between appends: the window's start moves past covered groups any number
    // of times, at any point, even past events not added yet (a head covering what this object has
    // not observed).
    const scenario = logArb.chain((log) =>
      fc.record({
        log: fc.constant(log),
        policy: policyArb,
        trims: fc.array(fc.tuple(fc.nat(log.length), fc.nat(log.length + 2)), { maxLength: 12 }),
        undoEntries: fc.integer({ min: 1, max: 40 }),
      }),
    );
    fc.assert(
      fc.property(scenario, ({ log, policy, trims, undoEntries }) => {
        const ledger = new TailLedger(policy, 0, undefined, undoEntries);
        let window: StoredEvent[] = [];
        let start = 0;
        const check = () => {
          const fresh = new TailLedger(policy, start);
          for (const event of window) fresh.add(event);
          expect(ledger.groups()).toEqual(groupsAfter(window, start, policy));
          // As of any earlier point it remembers, the groups the events through it fold to.
          for (let asOf = start; asOf <= ledger.lastSeq; asOf++) {
            const then = ledger.groupsAsOf(asOf);
            if (then !== undefined) expect(then).toEqual(groupsAfter(window.filter((e) => e.seq <= asOf), start, policy));
          }
          expect([ledger.tailChars, ledger.tailMessages]).toEqual([fresh.tailChars, fresh.tailMessages]);
          for (let absorbed = start; absorbed <= ledger.lastSeq; absorbed++) expect(sorted(ledger.references(absorbed))).toEqual(sorted(fresh.references(absorbed)));
          // Nothing that left the window is still held: the lists are the fresh ledger's, entry for entry.
          expect(ledger.census()).toEqual(fresh.census());
        };
        log.forEach((event, i) => {
          for (const [at, to] of trims) {
            if (at !== i || to <= start) continue;
            ledger.trim(to, window.filter((e) => e.seq <= to));
            window = window.filter((e) => e.seq > to);
            start = to;
            check();
          }
          if (event.seq <= start) return;
          ledger.add(event);
          window.push(event);
          check();
        });
      }),
      // Trims meet the collisions they must handle (a reused id, a correction or reply before its
      // message) more rarely than adds do: more runs.
      { numRuns: 2_000 },
    );
  });

  it("a later source reusing a covered message's id opens its group, with the replies and plain answers that follow it", () => {
    const events = storeAll([
      source("m1", "The first m1."),
      source("m2", "Two."),
      source("m1", "A second m1, never folded while the first is held."),
      proposal("p1", "agent-a", "A reply to m1.", { replyTo: "m1" }),
      delivered("p1"),
      proposal("p2", "agent-a", "A plain answer."),
      delivered("p2"),
      edit("m1", "m1, edited."),
    ]);
    const ledger = new TailLedger(EVERYTHING, 0);
    for (const event of events) ledger.add(event);
    expect(ledger.groups().map((g) => [g.seq, g.turns.map((t) => t.id)])).toEqual([
      [1, ["s1", "p4"]],
      [2, ["s2", "p6"]],
    ]);
    ledger.trim(2, events.slice(0, 2));
    // Fresh over seq 3 on: the second m1 opens group 3, takes the reply to m1, the plain answer and the edit.
    expect(ledger.groups().map((g) => [g.seq, g.turns.map((t) => [t.id, t.text])])).toEqual([
      [
        3,
        [
          ["s3", "m1, edited."],
          ["p4", "A reply to m1."],
          ["p6", "A plain answer."],
        ],
      ],
    ]);
    expect(ledger.tailChars).toBe(foldedTailChars(events.slice(2), EVERYTHING, 2));
  });

  it("a later source reusing a covered message's id takes the plain answers after it from an older group the window still holds", () => {
    const events = storeAll([
      source("m1", "The first m1."),
      source("a", "A message the window keeps."),
      source("m1", "A second m1."),
      proposal("p1", "agent-a", "A plain answer after the second m1."),
      delivered("p1"),
    ]);
    const ledger = new TailLedger(EVERYTHING, 0);
    for (const event of events) ledger.add(event);
    // While the first m1 is held, the second opens nothing: the answer is in the group of `a`.
    expect(ledger.groups().map((g) => [g.seq, g.turns.map((t) => t.id)])).toEqual([
      [1, ["s1"]],
      [2, ["s2", "p4"]],
    ]);
    ledger.trim(1, events.slice(0, 1));
    expect(ledger.groups().map((g) => [g.seq, g.turns.map((t) => t.id)])).toEqual([
      [2, ["s2"]],
      [3, ["s3", "p4"]],
    ]);
    const fresh = new TailLedger(EVERYTHING, 1);
    for (const event of events.slice(1)) fresh.add(event);
    expect(ledger.census()).toEqual(fresh.census());
  });

  it("holds, list by list, what its events need and nothing else (its census)", () => {
    const events = storeAll([
      source("m1", "One."),
      proposal("p1", "agent-a", "A reply to m1.", { replyTo: "m1" }),
      delivered("p1"),
      edit("m1", "One, edited."),
      source("m1", "m1 again."),
      proposal("p2", "agent-a", "A reply to a message not here.", { replyTo: "gone" }),
      delivered("p9"),
      edit("gone", "Edited elsewhere."),
      proposal("p3", "agent-a", "A plain answer."),
    ]);
    const ledger = new TailLedger(EVERYTHING, 0);
    for (const event of events) ledger.add(event);
    expect(ledger.census()).toEqual({
      groups: ["1"],
      sources: ["m1:1"],
      sourceByGroup: ["1"],
      openGroups: ["1"],
      laterSources: ["m1:5"],
      repliesTo: ["gone:6", "m1:2"],
      corrections: ["gone:8", "m1:4"],
      proposals: ["p1:2", "p2:6", "p3:9"],
      effective: ["p1:2@1", "p3:9@1"],
      groupProposals: ["1:p1,p3"],
      deliveries: ["p1:3", "p9:7"],
      outsideCorrections: ["gone:8"],
      outsideReplies: ["gone:p2@6"],
      outsideDeliveries: ["p9:7"],
    });
  });

  it("once a boundary covers the reply an id kept, keeps that id's next proposal; a delivery left without its proposal speaks of covered history", () => {
    const events = storeAll([
      source("m1", "One."),
      proposal("p1", "agent-a", "First try.", { key: "a" }),
      proposal("p2", "agent-a", "Covered, delivered after the boundary."),
      source("m2", "Two."),
      proposal("p1", "agent-a", "Second try, kept once the first is covered.", { key: "b" }),
      delivered("p1"),
      delivered("p2"),
    ]);
    const ledger = new TailLedger(EVERYTHING, 0);
    for (const event of events) ledger.add(event);
    expect(sorted(ledger.references(0))).toEqual({ messageIds: [], proposalIds: [] });
    ledger.trim(3, events.slice(0, 3));
    expect(ledger.groups().map((g) => [g.seq, g.turns.map((t) => t.id)])).toEqual([[4, ["s4", "p5"]]]);
    expect(sorted(ledger.references(3))).toEqual({ messageIds: [], proposalIds: ["p2"] });
    expect(sorted(ledger.references(6))).toEqual({ messageIds: [], proposalIds: ["p2"] });
    expect(sorted(ledger.references(7))).toEqual({ messageIds: [], proposalIds: [] });
  });

  it("remembers the groups as of a recent point, not further back than it holds, and not across a trim that re-folded a group", () => {
    const events = storeAll([
      source("m1", "One."),
      edit("m2", "Edited before it arrived."),
      source("m2", "Two."),
      source("m3", "Three."),
      edit("m1", "One, edited."),
      edit("m2", "Two, edited late."),
    ]);
    const texts = (groups: readonly { turns: readonly { text: string }[] }[] | undefined) => groups?.map((g) => g.turns.map((t) => t.text));
    const ledger = new TailLedger(EVERYTHING, 0, undefined, 3);
    for (const event of events) ledger.add(event);
    // Three entries, one group each: m3 opening its group at 4 and the edits at 5 and 6. Each is
    // undone as of a point before it; as of 2 the entries of m2 (at 3) are gone.
    expect(texts(ledger.groupsAsOf(5))).toEqual([["One, edited."], ["Edited before it arrived."], ["Three."]]);
    expect(texts(ledger.groupsAsOf(4))).toEqual([["One."], ["Edited before it arrived."], ["Three."]]);
    expect(texts(ledger.groupsAsOf(3))).toEqual([["One."], ["Edited before it arrived."]]);
    expect(ledger.groupsAsOf(2)).toBeUndefined();
    // Covering m1 and the early edit re-folds m2's group: what it held before the late edit included
    // the early one, so nothing before now is answered.
    ledger.trim(2, events.slice(0, 2));
    expect(texts(ledger.groups())).toEqual([["Two, edited late."], ["Three."]]);
    expect(ledger.groupsAsOf(5)).toBeUndefined();
    expect(texts(ledger.groupsAsOf(6))).toEqual([["Two, edited late."], ["Three."]]);
  });

  it("after a trim that re-folds nothing, still answers nothing further back than it remembers", () => {
    const events = storeAll([source("m1", "One."), source("m2", "Two."), source("m3", "Three."), edit("m2", "Two, edited."), edit("m3", "Three, edited."), edit("m2", "Two, edited again.")]);
    const ledger = new TailLedger(EVERYTHING, 0, undefined, 3);
    for (const event of events) ledger.add(event);
    // Three entries at most: the edits at 5 and 6 are kept, everything through 4 let go.
    expect(ledger.groupsAsOf(3)).toBeUndefined();
    ledger.trim(1, events.slice(0, 1));
    expect(ledger.groupsAsOf(3)).toBeUndefined();
    expect(ledger.groupsAsOf(4)?.map((g) => g.turns.map((t) => t.text))).toEqual([["Two, edited."], ["Three."]]);
  });

  it("refuses events out of order, naming both sequence numbers", () => {
    const ledger = new TailLedger(EVERYTHING, 5);
    const [first] = storeAll([source("m1", "hi")], 5);
    expect(() => ledger.add(first!)).toThrow(new RangeError("events must be added in order: 5 after 5"));
    const [next] = storeAll([source("m1", "hi")], 6);
    ledger.add(next!);
    expect(() => ledger.add(next!)).toThrow(new RangeError("events must be added in order: 6 after 6"));
  });
});

describe("groupsAfter", () => {
  const EVERYONE: ReconstructionPolicy = { admittedAgents: "all", includeSensitive: false };
  // 1 m1; 2 m2; 3–4 a reply to m1, delivered; 5–6 a reply to m0, which this log does not hold, delivered; 7 m3.
  const log = storeAll([
    source("m1", "Which vendor?"),
    source("m2", "And the price?"),
    proposal("pa", "agent-a", "Vendor B.", { replyTo: "m1" }),
    delivered("pa"),
    proposal("pz", "agent-a", "About m0.", { replyTo: "m0" }),
    delivered("pz"),
    source("m3", "Thanks."),
  ]);
  const shape = (after: number) => groupsAfter(log, after, EVERYONE).map((g) => [g.seq, g.turns.map((t) => t.id)]);

  it("holds the whole groups opened after the point, with their late replies, and no reply to a message outside the log", () => {
    expect(shape(0)).toEqual([
      [1, ["s1", "p3"]],
      [2, ["s2"]],
      [7, ["s7"]],
    ]);
    expect(shape(1)).toEqual([
      [2, ["s2"]],
      [7, ["s7"]],
    ]);
    expect(shape(2)).toEqual([[7, ["s7"]]]);
    expect(shape(7)).toEqual([]);
  });
});
