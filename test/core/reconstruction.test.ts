import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EventInput, StoredEvent } from "../../src/core/events";
import type { ReconstructionPolicy, Turn } from "../../src/core/reconstruction";
import { reconstruct, turnHash } from "../../src/core/reconstruction";
import { ADA, BOB, deletion, delivered, edit, failed, proposal, run, source, storeAll, stored } from "./event-builders";
import { AGENTS, EDIT_TIMES, LAST_WORD, PROPOSALS, inputArb, logArb, optional, policyArb, text } from "./log-arbitraries";

const EVERYTHING: ReconstructionPolicy = { admittedAgents: "all", includeSensitive: true };
const PUBLIC_ALL: ReconstructionPolicy = { admittedAgents: "all", includeSensitive: false };

const shuffled = <T>(items: readonly T[]): fc.Arbitrary<T[]> =>
  fc.shuffledSubarray([...items], { minLength: items.length, maxLength: items.length });

const RUNS = { numRuns: 150 };

// ---------------------------------------------------------------------------------------------
// A deliberately naive reference fold, written from the contract rather than from the code.

interface ExpectedTurn {
  readonly id: string;
  readonly group: number;
  readonly role: "user" | "assistant";
  readonly authorId: string;
  readonly text: string;
  readonly sensitive: boolean;
}

function editInstant(editedAt: string | undefined): number {
  return editedAt === undefined ? Number.NEGATIVE_INFINITY : Date.parse(editedAt);
}

function referenceFold(events: readonly StoredEvent[], policy: ReconstructionPolicy): ExpectedTurn[] {
  const log = [...events].sort((a, b) => a.seq - b.seq);
  const sources = log.flatMap((e) => (e.kind === "source" ? [e] : []));
  const firstSource = (messageId: string) => sources.find((s) => s.body.messageId === messageId);
  const messages = sources.filter((s) => firstSource(s.body.messageId) === s);
  const turns: ExpectedTurn[] = [];

  for (const message of messages) {
    const id = message.body.messageId;
    const corrections = log.flatMap((e) => (e.kind === "correction" && e.body.targetMessageId === id ? [e] : []));
    if (corrections.some((c) => c.body.action === "delete")) continue;
    let winner: { seq: number; at: number; text: string; sensitive: boolean } | undefined;
    for (const c of corrections) {
      if (c.body.action !== "edit") continue;
      const candidate = { seq: c.seq, at: editInstant(c.body.editedAt), text: c.body.text, sensitive: c.sensitive };
      if (winner === undefined || candidate.at > winner.at || (candidate.at === winner.at && candidate.seq > winner.seq)) {
        winner = candidate;
      }
    }
    const sensitive = message.sensitive || (winner?.sensitive ?? false);
    if (sensitive && !policy.includeSensitive) continue;
    turns.push({
      id: `s${message.seq}`,
      group: message.seq,
      role: "user",
      authorId: message.body.author.id,
      text: winner?.text ?? message.body.text,
      sensitive,
    });
  }

  const proposals = log.flatMap((e) => (e.kind === "proposal" ? [e] : []));
  for (const p of proposals) {
    if (proposals.find((q) => q.body.proposalId === p.body.proposalId) !== p) continue;
    const isDelivered = log.some(
      (e) => e.kind === "delivery" && e.body.status === "delivered" && e.body.proposalId === p.body.proposalId,
    );
    if (!isDelivered) continue;
    if (policy.admittedAgents !== "all" && !policy.admittedAgents.has(p.body.agentId)) continue;
    if (p.sensitive && !policy.includeSensitive) continue;
    const repliedTo = p.body.replyToMessageId === undefined ? undefined : firstSource(p.body.replyToMessageId);
    const before = messages.filter((m) => m.seq < p.seq).at(-1);
    turns.push({
      id: `p${p.seq}`,
      group: repliedTo?.seq ?? before?.seq ?? 0,
      role: "assistant",
      authorId: p.body.agentId,
      text: p.body.text,
      sensitive: p.sensitive,
    });
  }

  const rank = (t: ExpectedTurn): number => (t.role === "user" ? 0 : 1);
  const seqOf = (t: ExpectedTurn): number => Number(t.id.slice(1));
  return turns.sort((a, b) => a.group - b.group || rank(a) - rank(b) || seqOf(a) - seqOf(b));
}

const summary = (turns: readonly Turn[]): ExpectedTurn[] =>
  turns.map((t) => ({ id: t.id, group: t.group, role: t.role, authorId: t.author.id, text: t.text, sensitive: t.sensitive }));

const textsOf = (turns: readonly Turn[]): string[] => turns.map((t) => `${t.id}:${t.text}`);

// ---------------------------------------------------------------------------------------------

describe("reconstruct: examples", () => {
  it("folds an empty log into no turns", () => {
    expect(reconstruct([], EVERYTHING)).toEqual([]);
  });

  it("turns a source and a delivered reply into a user and an assistant turn", () => {
    const events = storeAll([
      source("m1", "hello", { author: BOB }),
      run("r1", "agent-a"),
      proposal("p1", "agent-a", "hi Bob", { replyTo: "m1" }),
      delivered("p1"),
    ]);
    expect(reconstruct(events, EVERYTHING)).toEqual([
      {
        id: "s1",
        group: 1,
        role: "user",
        author: BOB,
        text: "hello",
        hash: turnHash("user", BOB, "hello"),
        originSeq: 1,
        effectiveSeq: 1,
        messageId: "m1",
        sensitive: false,
        edited: false,
      },
      {
        id: "p3",
        group: 1,
        role: "assistant",
        author: { id: "agent-a" },
        text: "hi Bob",
        hash: turnHash("assistant", { id: "agent-a" }, "hi Bob"),
        originSeq: 3,
        effectiveSeq: 4,
        messageId: "p1",
        sensitive: false,
        edited: false,
      },
    ]);
  });

  it("places replies by replyToMessageId, else after the latest earlier source, else in group 0", () => {
    const events = storeAll([
      proposal("p0", "agent-a", "before anything"), // 1 → group 0
      delivered("p0"), // 2
      source("m1", "first"), // 3
      source("m2", "second"), // 4
      proposal("p1", "agent-a", "answers m1", { replyTo: "m1" }), // 5 → group 3
      proposal("p2", "agent-a", "answers nothing known", { replyTo: "m-unknown" }), // 6 → group 4
      proposal("p3", "agent-a", "answers nothing"), // 7 → group 4
      delivered("p3"), // 8
      delivered("p2"), // 9
      delivered("p1"), // 10
    ]);
    const turns = reconstruct(events, EVERYTHING);
    expect(turns.map((t) => [t.id, t.group])).toEqual([
      ["p1", 0],
      ["s3", 3],
      ["p5", 3],
      ["s4", 4],
      ["p6", 4],
      ["p7", 4],
    ]);
  });

  it("lands a late delivery in the group of the message it answers, with the delivery as effectiveSeq", () => {
    const events = storeAll([
      source("m1", "question"), // 1
      proposal("p1", "agent-a", "answer", { replyTo: "m1" }), // 2
      source("m2", "follow-up"), // 3
      source("m3", "another"), // 4
      delivered("p1"), // 5
    ]);
    const turns = reconstruct(events, EVERYTHING);
    expect(turns.map((t) => t.id)).toEqual(["s1", "p2", "s3", "s4"]);
    expect(turns[1]).toMatchObject({ group: 1, originSeq: 2, effectiveSeq: 5 });
  });

  it("puts the user turn first in its group even when a reply's seq precedes the source", () => {
    // A reply recorded before the message it names (the message arrived late) still follows it.
    const events = storeAll([proposal("p1", "agent-a", "early", { replyTo: "m1" }), delivered("p1"), source("m1", "late")]);
    expect(reconstruct(events, EVERYTHING).map((t) => [t.id, t.group])).toEqual([
      ["s3", 3],
      ["p1", 3],
    ]);
  });

  it("never shows an undelivered proposal, nor one whose deliveries all failed", () => {
    const events = storeAll([
      source("m1", "q"),
      proposal("p1", "agent-a", "never sent"),
      proposal("p2", "agent-a", "failed twice"),
      failed("p2", "blocked", { key: "f1" }),
      failed("p2", "blocked again", { key: "f2" }),
    ]);
    expect(reconstruct(events, EVERYTHING).map((t) => t.id)).toEqual(["s1"]);
  });

  it("shows a proposal that was delivered after an earlier failed attempt", () => {
    const events = storeAll([source("m1", "q"), proposal("p1", "agent-a", "retry"), failed("p1"), delivered("p1")]);
    expect(reconstruct(events, EVERYTHING).map((t) => [t.id, t.effectiveSeq])).toEqual([
      ["s1", 1],
      ["p2", 4],
    ]);
  });

  it("admits only the listed agents' replies", () => {
    const events = storeAll([
      source("m1", "q"),
      proposal("p1", "agent-a", "from a"),
      proposal("p2", "agent-b", "from b"),
      delivered("p1"),
      delivered("p2"),
    ]);
    const cases: [ReconstructionPolicy["admittedAgents"], string[]][] = [
      ["all", ["s1", "p2", "p3"]],
      [new Set(["agent-a"]), ["s1", "p2"]],
      [new Set(["agent-b"]), ["s1", "p3"]],
      [new Set<string>(), ["s1"]],
      [new Set(["agent-z"]), ["s1"]],
    ];
    for (const [admittedAgents, ids] of cases) {
      expect(reconstruct(events, { admittedAgents, includeSensitive: true }).map((t) => t.id)).toEqual(ids);
    }
  });

  it("excludes sensitive sources, sensitive edits and sensitive replies unless includeSensitive", () => {
    const events = storeAll([
      source("m1", "public"), // 1
      source("m2", "secret", { sensitive: true }), // 2
      source("m3", "public, later edited sensitively"), // 3
      edit("m3", "now secret", { sensitive: true }), // 4
      proposal("p1", "agent-a", "public reply", { replyTo: "m1" }), // 5
      proposal("p2", "agent-a", "sensitive reply", { replyTo: "m1", sensitive: true }), // 6
      delivered("p1"), // 7
      delivered("p2"), // 8
    ]);
    expect(reconstruct(events, PUBLIC_ALL).map((t) => t.id)).toEqual(["s1", "p5"]);
    const all = reconstruct(events, EVERYTHING);
    expect(all.map((t) => [t.id, t.sensitive])).toEqual([
      ["s1", false],
      ["p5", false],
      ["p6", true],
      ["s2", true],
      ["s3", true],
    ]);
  });

  it("folds a reused messageId and a reused proposalId only once (the first wins)", () => {
    const events = storeAll([
      source("m1", "original"),
      source("m1", "impostor"),
      proposal("p1", "agent-a", "first"),
      proposal("p1", "agent-a", "second"),
      delivered("p1"),
    ]);
    expect(textsOf(reconstruct(events, EVERYTHING))).toEqual(["s1:original", "p3:first"]);
  });

  it("ignores run events entirely", () => {
    const withRuns = storeAll([run("r1", "agent-a"), source("m1", "q"), run("r2", "agent-b")]);
    expect(textsOf(reconstruct(withRuns, EVERYTHING))).toEqual(["s2:q"]);
  });
});

describe("reconstruct: corrections", () => {
  it("applies an edit to its target only", () => {
    const events = storeAll([source("m1", "one"), source("m2", "two"), edit("m2", "two, fixed")]);
    const turns = reconstruct(events, EVERYTHING);
    expect(textsOf(turns)).toEqual(["s1:one", "s2:two, fixed"]);
    expect(turns[0]).toMatchObject({ edited: false, effectiveSeq: 1 });
    expect(turns[1]).toMatchObject({ edited: true, effectiveSeq: 3, hash: turnHash("user", ADA, "two, fixed") });
  });

  it("applies an edit recorded before its source", () => {
    const events = storeAll([edit("m1", "edited first"), source("m1", "original")]);
    expect(reconstruct(events, EVERYTHING)).toEqual([
      expect.objectContaining({ id: "s2", text: "edited first", edited: true, effectiveSeq: 2 }),
    ]);
  });

  it("applies a deletion recorded before its source", () => {
    const events = storeAll([deletion("m1"), source("m1", "gone"), source("m2", "stays")]);
    expect(reconstruct(events, EVERYTHING).map((t) => t.id)).toEqual(["s3"]);
  });

  it("removes a deleted message's turn but keeps its group's replies", () => {
    const events = storeAll([
      source("m1", "keep"),
      source("m2", "delete me"),
      proposal("p1", "agent-a", "reply to m2", { replyTo: "m2" }),
      delivered("p1"),
      deletion("m2"),
      edit("m2", "edit after delete"),
    ]);
    expect(reconstruct(events, EVERYTHING).map((t) => [t.id, t.group])).toEqual([
      ["s1", 1],
      ["p3", 2],
    ]);
  });

  const T1 = "2024-05-01T10:00:00.000Z";
  const T2 = "2024-05-01T10:05:00.000Z";
  it.each([
    { name: "later editedAt beats later seq", a: T2, b: T1, winner: "A" },
    { name: "later editedAt wins in seq order too", a: T1, b: T2, winner: "B" },
    { name: "equal editedAt: later seq wins", a: T1, b: T1, winner: "B" },
    { name: "no editedAt: later seq wins", a: undefined, b: undefined, winner: "B" },
  ])("chooses the latest edit: $name", ({ a, b, winner }) => {
    const events = storeAll([
      source("m1", "original"),
      edit("m1", "A", { key: "a", ...(a === undefined ? {} : { editedAt: a }) }),
      edit("m1", "B", { key: "b", ...(b === undefined ? {} : { editedAt: b }) }),
    ]);
    expect(reconstruct(events, EVERYTHING)[0]?.text).toBe(winner);
  });

  // Regression: editedAt was once compared as a string, but the schema accepts any ISO datetime with
  // an offset and any sub-second precision, so string order is not time order.
  it("chooses the later edit instant when editedAt values use different UTC offsets", () => {
    const events = storeAll([
      source("m1", "original"),
      edit("m1", "edited at 11:00Z", { key: "a", editedAt: "2024-05-01T11:00:00Z" }),
      edit("m1", "edited at 10:30Z", { key: "b", editedAt: "2024-05-01T12:30:00+02:00" }),
    ]);
    expect(reconstruct(events, EVERYTHING)[0]?.text).toBe("edited at 11:00Z");
  });

  it("chooses the later edit instant when editedAt values differ in precision", () => {
    const events = storeAll([
      source("m1", "original"),
      edit("m1", "half a second later", { key: "a", editedAt: "2024-05-01T10:00:00.500Z" }),
      edit("m1", "on the second", { key: "b", editedAt: "2024-05-01T10:00:00Z" }),
    ]);
    expect(reconstruct(events, EVERYTHING)[0]?.text).toBe("half a second later");
  });
});

describe("reconstruct: properties", () => {
  it("matches a naive reference fold", () => {
    fc.assert(
      fc.property(logArb, policyArb, (events, policy) => {
        expect(summary(reconstruct(events, policy))).toEqual(referenceFold(events, policy));
      }),
      RUNS,
    );
  });

  it("is deterministic and independent of the input array's order", () => {
    fc.assert(
      fc.property(
        logArb.chain((events) => fc.tuple(fc.constant(events), shuffled(events))),
        policyArb,
        ([events, reordered], policy) => {
          const turns = reconstruct(events, policy);
          expect(reconstruct(events, policy)).toEqual(turns);
          expect(reconstruct(reordered, policy)).toEqual(turns);
        },
      ),
      RUNS,
    );
  });

  it("replaying the same events (fresh copies, rebuilt hashes) yields the same ids and hashes", () => {
    fc.assert(
      fc.property(fc.array(inputArb, { maxLength: 30 }), (inputs) => {
        const first = reconstruct(storeAll(inputs), EVERYTHING);
        const replay = reconstruct(storeAll(structuredClone(inputs)), EVERYTHING);
        expect(replay.map((t) => [t.id, t.hash])).toEqual(first.map((t) => [t.id, t.hash]));
        expect(replay).toEqual(first);
      }),
      RUNS,
    );
  });

  it("gives every turn a well-formed id, its content hash, and a consistent origin", () => {
    fc.assert(
      fc.property(logArb, policyArb, (events, policy) => {
        const bySeq = new Map(events.map((e) => [e.seq, e]));
        for (const turn of reconstruct(events, policy)) {
          expect(turn.hash).toBe(turnHash(turn.role, turn.author, turn.text));
          expect(turn.hash).toMatch(/^[0-9a-f]{64}$/);
          const origin = bySeq.get(turn.originSeq);
          if (turn.role === "user") {
            expect(turn.id).toBe(`s${turn.originSeq}`);
            expect(turn.group).toBe(turn.originSeq);
            expect(origin?.kind).toBe("source");
          } else {
            expect(turn.id).toBe(`p${turn.originSeq}`);
            expect(origin?.kind).toBe("proposal");
          }
          expect(turn.effectiveSeq).toBeGreaterThanOrEqual(turn.originSeq);
        }
      }),
      RUNS,
    );
  });

  it("orders turns by group, the user turn first, then replies by seq; ids are unique", () => {
    fc.assert(
      fc.property(logArb, policyArb, (events, policy) => {
        const turns = reconstruct(events, policy);
        expect(new Set(turns.map((t) => t.id)).size).toBe(turns.length);
        for (const [i, next] of turns.entries()) {
          const prev = turns[i - 1];
          if (prev === undefined) continue;
          expect(prev.group).toBeLessThanOrEqual(next.group);
          if (prev.group !== next.group) continue;
          expect(next.role).toBe("assistant");
          if (prev.role === "assistant") expect(prev.originSeq).toBeLessThan(next.originSeq);
        }
      }),
      RUNS,
    );
  });

  it("shows only delivered proposals of admitted agents", () => {
    fc.assert(
      fc.property(logArb, policyArb, (events, policy) => {
        for (const turn of reconstruct(events, policy)) {
          if (turn.role !== "assistant") continue;
          const deliveredOnce = events.some(
            (e) => e.kind === "delivery" && e.body.status === "delivered" && e.body.proposalId === turn.messageId,
          );
          expect(deliveredOnce).toBe(true);
          if (policy.admittedAgents !== "all") expect(policy.admittedAgents.has(turn.author.id)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it("narrowing the admitted agents only removes those agents' replies", () => {
    fc.assert(
      fc.property(logArb, fc.subarray([...AGENTS]), fc.boolean(), (events, agents, includeSensitive) => {
        const admitted = new Set<string>(agents);
        const all = reconstruct(events, { admittedAgents: "all", includeSensitive });
        const some = reconstruct(events, { admittedAgents: admitted, includeSensitive });
        expect(some).toEqual(all.filter((t) => t.role === "user" || admitted.has(t.author.id)));
      }),
      RUNS,
    );
  });

  it("excluding sensitive content removes exactly the sensitive turns", () => {
    fc.assert(
      fc.property(logArb, (events) => {
        const open = reconstruct(events, EVERYTHING);
        expect(reconstruct(events, PUBLIC_ALL)).toEqual(open.filter((t) => !t.sensitive));
      }),
      RUNS,
    );
  });

  it("failed deliveries never change the turns", () => {
    fc.assert(
      fc.property(fc.array(inputArb, { maxLength: 30 }), fc.subarray([...PROPOSALS]), (inputs, failing) => {
        const before = reconstruct(storeAll(inputs), EVERYTHING);
        const after = reconstruct(storeAll([...inputs, ...failing.map((p) => failed(p))]), EVERYTHING);
        expect(after).toEqual(before);
      }),
      RUNS,
    );
  });

  it("shows the edit with the latest editedAt instant, ties going to the later seq, wherever the source sits", () => {
    const editsArb = fc.array(optional(fc.constantFrom(...EDIT_TIMES)), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(editsArb, fc.nat(), (times, at) => {
        const edits = times.map((editedAt, i) =>
          edit("m1", `edit ${i}`, { key: `e${i}`, ...(editedAt === undefined ? {} : { editedAt }) }),
        );
        const sourceAt = at % (edits.length + 1);
        const inputs = [...edits.slice(0, sourceAt), source("m1", "original"), ...edits.slice(sourceAt)];
        const events = storeAll(inputs);
        // The winner: greatest instant (no editedAt: earliest), then greatest seq.
        let best = -1;
        for (const [i, editedAt] of times.entries()) {
          const bestAt = best < 0 ? Number.NaN : editInstant(times[best]);
          if (best < 0 || editInstant(editedAt) >= bestAt) best = i;
        }
        expect(reconstruct(events, EVERYTHING).map((t) => t.text)).toEqual([`edit ${best}`]);
      }),
      RUNS,
    );
  });

  /** A log together with one message that has a visible user turn in it. */
  const logWithVisibleMessage = logArb
    .filter((events) => reconstruct(events, EVERYTHING).some((t) => t.role === "user"))
    .chain((events) =>
      fc.tuple(
        fc.constant(events),
        fc.constantFrom(...reconstruct(events, EVERYTHING).filter((t) => t.role === "user")),
      ),
    );

  it("an edit changes only its target turn's text and hash", () => {
    fc.assert(
      fc.property(logWithVisibleMessage, text, ([events, target], newText) => {
        const before = reconstruct(events, EVERYTHING);
        const seq = events.length + 1;
        const correction = edit(target.messageId, newText, { key: "the-edit", editedAt: LAST_WORD });
        const after = reconstruct([...events, stored(seq, correction)], EVERYTHING);
        const sourceSensitive = events.find((e) => e.seq === target.originSeq)?.sensitive ?? true;
        expect(after).toEqual(
          before.map((t) =>
            t.id === target.id
              ? {
                  ...t,
                  text: newText,
                  hash: turnHash("user", t.author, newText),
                  edited: true,
                  effectiveSeq: seq,
                  sensitive: sourceSensitive,
                }
              : t,
          ),
        );
      }),
      RUNS,
    );
  });

  it("a deletion removes only its target turn", () => {
    fc.assert(
      fc.property(logWithVisibleMessage, ([events, target]) => {
        const before = reconstruct(events, EVERYTHING);
        const after = reconstruct([...events, stored(events.length + 1, deletion(target.messageId, { key: "the-delete" }))], EVERYTHING);
        expect(after).toEqual(before.filter((t) => t.id !== target.id));
      }),
      RUNS,
    );
  });
});

describe("reconstruct with a shared turn-hash memo", () => {
  const EVERY: ReconstructionPolicy = { admittedAgents: "all", includeSensitive: true };
  const ops = fc.array(
    fc.oneof(
      fc.record({ op: fc.constant("source" as const), id: fc.integer({ min: 0, max: 5 }), text: fc.string({ maxLength: 12 }) }),
      fc.record({ op: fc.constant("edit" as const), id: fc.integer({ min: 0, max: 5 }), text: fc.string({ maxLength: 12 }), at: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ op: fc.constant("delete" as const), id: fc.integer({ min: 0, max: 5 }) }),
      fc.record({ op: fc.constant("reply" as const), id: fc.integer({ min: 0, max: 5 }), text: fc.string({ maxLength: 12 }) }),
      fc.record({ op: fc.constant("deliver" as const), id: fc.integer({ min: 0, max: 5 }) }),
    ),
    { maxLength: 30 },
  );
  const toInputs = (list: { op: string; id: number; text?: string; at?: number }[]): EventInput[] =>
    list.map((o, i) => {
      const key = { key: `k${i}` };
      switch (o.op) {
        case "source":
          return source(`m${o.id}`, o.text ?? "", key);
        case "edit":
          return edit(`m${o.id}`, o.text ?? "", { ...key, editedAt: `2026-01-01T00:00:0${o.at ?? 0}Z` });
        case "delete":
          return deletion(`m${o.id}`, key);
        case "reply":
          return proposal(`p${o.id}`, "helper", o.text ?? "", { ...key, replyTo: `m${o.id}` });
        default:
          return delivered(`p${o.id}`, key);
      }
    });

  it("keys each turn's hash by its id and the newest event that shaped it, and hashes a known key no more", () => {
    const events = storeAll([source("m1", "hello"), proposal("p1", "helper", "hi Ada", { replyTo: "m1" }), delivered("p1"), edit("m1", "hello again")]);
    const memo = new Map<string, string>();
    const turns = reconstruct(events, EVERY, memo);
    expect([...memo]).toEqual([
      ["s1@4", turnHash("user", ADA, "hello again")],
      ["p2@3", turnHash("assistant", { id: "helper" }, "hi Ada")],
    ]);
    expect(turns.map((t) => t.hash)).toEqual([...memo.values()]);
    // A key the memo already holds is taken as it is: its turn is not hashed again.
    const seeded = new Map([["s1@4", "0".repeat(64)]]);
    expect(reconstruct(events, EVERY, seeded).map((t) => t.hash)).toEqual(["0".repeat(64), turnHash("assistant", { id: "helper" }, "hi Ada")]);
  });

  it("gives exactly the turns of an unmemoized fold, for every prefix folded with one memo", () => {
    fc.assert(
      fc.property(ops, (list) => {
        const events = storeAll(toInputs(list));
        const memo = new Map<string, string>();
        // Fold growing prefixes with one memo, as preflight does on every new event.
        for (let n = 0; n <= events.length; n++) {
          const prefix = events.slice(0, n);
          expect(reconstruct(prefix, EVERY, memo)).toEqual(reconstruct(prefix, EVERY));
        }
      }),
      { numRuns: 150 },
    );
  });
});
