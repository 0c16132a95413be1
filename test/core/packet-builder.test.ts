import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Group } from "../../src/core/compaction-plan";
import { groupTurns } from "../../src/core/compaction-plan";
import type { CompactionPolicy } from "../../src/core/declarations";
import type { EventInput } from "../../src/core/events";
import { hashCanonical, sha256Hex } from "../../src/core/hash";
import type { Amendment } from "../../src/core/packet";
import { packetSchema } from "../../src/core/packet";
import type { FrozenSlice, PacketInput } from "../../src/core/packet-builder";
import { buildPacket, freezeSlice, groupEvents, sliceRecallText } from "../../src/core/packet-builder";
import { renderBoundaryBody } from "../../src/core/compactor-output";
import { reconstruct } from "../../src/core/reconstruction";
import { renderSliceLine } from "../../src/core/render";
import { PROMPT, storedDeclaration } from "./declaration-fixture";
import { CONVERSATION, source, storeAll, turn } from "./event-builders";
import { logArb, policyArb } from "./log-arbitraries";
import { FIRST } from "./resolver-fixture";

const declaration = storedDeclaration();
const { registration } = declaration;
const { agent, compactor } = registration;

/** One group per text: a source turn `s<i>` opening group i. */
const groupsOf = (texts: readonly string[]): Group[] => groupTurns(texts.map((text, i) => turn(`s${i + 1}`, i + 1, text)));

const policy = (overrides: Partial<CompactionPolicy> = {}): CompactionPolicy => ({ ...compactor.policy, ...overrides });

function packetOf(slice: FrozenSlice, window: PacketInput["window"] = [], overrides: Partial<PacketInput> = {}) {
  return buildPacket({
    conversationId: CONVERSATION,
    declaration,
    runId: "cmp_test",
    triggerSeq: 99,
    frontier: { id: "frn_x", hash: "f".repeat(64), startSeq: 1 },
    head: undefined,
    amendments: [],
    slice,
    window,
    memoryPages: [{ path: "people/ada", version: 2, contentHash: "c".repeat(64), content: "Ada leads invoicing." }],
    documents: [{ name: "identity", hash: "d".repeat(64), content: "We are the finance team." }],
    activeChars: 1_234,
    envelopeChars: 56,
    now: new Date("2026-01-02T03:04:05.000Z"),
    ...overrides,
  });
}

describe("freezeSlice", () => {
  it("freezes the oldest whole groups and keeps an exact tail within the target", () => {
    const groups = groupsOf(["a".repeat(150), "b".repeat(150), "c".repeat(150), "d".repeat(150), "e".repeat(150)]);
    const slice = freezeSlice(groups, policy(), agent.context);
    if (!slice.ok) throw new Error(slice.error.message);
    expect(slice.value.frozen.map((g) => g.seq)).toEqual([1, 2, 3]);
    expect(slice.value.tailChars).toBe(groups[3]!.chars + groups[4]!.chars);
    expect(slice.value.frozenChars).toBe(groups[0]!.chars + groups[1]!.chars + groups[2]!.chars);
    expect(slice.value.turns.map((t) => t.id)).toEqual(["s1", "s2", "s3"]);
    expect(sliceRecallText(slice.value)).toBe(["a".repeat(150), "b".repeat(150), "c".repeat(150)].join("\n"));
  });

  it.each([
    ["a newest group above the tail target", ["short", "x".repeat(500)], "tail_group_too_large"],
    ["every group fitting the tail", ["one", "two"], "nothing_to_freeze"],
    ["an oldest group above the frozen-prefix bound", ["x".repeat(2_500), "y".repeat(100)], "frozen_prefix_too_large"],
  ] as const)("fails closed, tagged, on %s", (_, texts, code) => {
    expect(freezeSlice(groupsOf(texts), policy({ maxFrozenChars: 2_000 }), agent.context)).toMatchObject({ ok: false, error: { code } });
  });

  it("refuses a slice whose frozen groups hold no turn: there is nothing to freeze", () => {
    // A group without turns ahead of one too large to freeze is all the bounds would let a run take.
    const [, large, tail] = groupsOf(["", "x".repeat(2_500), "tail"]);
    const empty: Group = { seq: 1, turns: [], chars: 0 };
    expect(freezeSlice([empty, large!, tail!], policy({ retainInputChars: tail!.chars, maxFrozenChars: 2_000 }), agent.context)).toEqual({
      ok: false,
      error: { code: "nothing_to_freeze", message: "the slice holds no turn" },
    });
  });

  it("counts the log events a group stands for: origins and the corrections or deliveries that shaped them", () => {
    const [group] = groupTurns([turn("s1", 1, "hi", { effectiveSeq: 4 }), turn("p2", 1, "hello", { effectiveSeq: 3 })]);
    expect(groupEvents(group!)).toBe(4);
    const [plain] = groupTurns([turn("s1", 1, "hi")]);
    expect(groupEvents(plain!)).toBe(1);
  });

  it("splits the groups into a frozen prefix and the retained rest, within every bound", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 300 }), { maxLength: 25 }),
        fc.integer({ min: 50, max: 900 }),
        fc.integer({ min: 100, max: 3_000 }),
        (sizes, retain, maxFrozenChars) => {
          const groups = groupsOf(sizes.map((n) => "x".repeat(n)));
          const slice = freezeSlice(groups, policy({ retainInputChars: retain, maxFrozenChars }), agent.context);
          if (!slice.ok) return ["tail_group_too_large", "nothing_to_freeze", "frozen_prefix_too_large"].includes(slice.error.code);
          const { frozen, frozenChars: chars, tailChars, frozenEvents: events, turns, tail } = slice.value;
          const rest = groups.slice(frozen.length);
          return (
            frozen.length > 0 &&
            frozen.every((g, i) => g === groups[i]) &&
            chars === frozen.reduce((n, g) => n + g.chars, 0) &&
            chars <= maxFrozenChars &&
            tailChars === rest.reduce((n, g) => n + g.chars, 0) &&
            tail.length === rest.length &&
            tail.every((g, i) => g === rest[i]) &&
            events === frozen.reduce((n, g) => n + groupEvents(g), 0) &&
            turns.length === frozen.reduce((n, g) => n + g.turns.length, 0)
          );
        },
      ),
    );
  });
});

describe("buildPacket", () => {
  /** The texts frozen, behind one retained group. */
  const slice = (texts: readonly string[]): FrozenSlice => {
    const groups = groupsOf([...texts, "tail"]);
    const result = freezeSlice(groups, policy({ retainInputChars: groups.at(-1)!.chars }), agent.context);
    if (!result.ok) throw new Error(result.error.message);
    return result.value;
  };

  it("is a packet the compactor can load, with the slice, its hashes and sizes bound", () => {
    const frozen = slice(["first message", "second message", "third message"]);
    const packet = packetSchema.parse(packetOf(frozen));
    const rendered = frozen.turns.map(renderSliceLine);
    expect(packet.frozen).toMatchObject({
      fromSeq: 1,
      throughSeq: 3,
      throughTurnId: "s3",
      sourceCount: 3,
      eventCount: 3,
      chars: frozen.frozenChars,
      turnIdsHash: hashCanonical(["s1", "s2", "s3"]),
      renderedHash: hashCanonical(rendered),
    });
    expect(packet.frozen.turns.map((t) => t.rendered)).toEqual(rendered);
    expect(packet.sizes).toEqual({ preCompactionChars: 1_234, retainedTailChars: frozen.tailChars, replacedChars: 56 + frozen.frozenChars });
    expect(packet).toMatchObject({ previousBoundary: null, historyAgents: ["agent-a", "agent-c"], triggerSeq: 99, promptHash: sha256Hex(PROMPT), createdAt: "2026-01-02T03:04:05.000Z" });
    expect(packet.documents).toEqual([{ name: "identity", hash: "d".repeat(64), content: "We are the finance team." }]);
  });

  it("follows the chain's head: names it as the previous boundary, with its summary as the compactor reads it", () => {
    const head = { body: FIRST.body, hash: FIRST.hash, coveredThroughSeq: FIRST.body.coveredThrough.seq };
    const packet = packetSchema.parse(packetOf(slice(["one", "two"]), [], { head }));
    expect(packet.previousBoundary).toEqual({ id: "boundary-1", hash: FIRST.hash, coveredThroughSeq: FIRST.body.coveredThrough.seq, body: renderBoundaryBody(FIRST.body.content) });
    expect(packet.previousBoundary?.body).toContain("Ada chose vendor B; Bob preferred vendor A on price.");
  });

  it("carries the amendments to turns the chain already covers", () => {
    const amendments: Amendment[] = [
      { turnId: "s1", group: 1, role: "user", kind: "edited", hashBefore: "b".repeat(64), hashAfter: "c".repeat(64), text: "hello again" },
      { turnId: "s2", group: 2, role: "user", kind: "deleted", hashBefore: "e".repeat(64), hashAfter: null, text: null },
    ];
    expect(packetSchema.parse(packetOf(slice(["one", "two"]), [], { amendments })).amendments).toEqual(amendments);
  });

  it("takes the chat's type from the frozen sources only, never from later ones", () => {
    const typed = (id: string, type: "direct" | "group"): EventInput => {
      const input = source(id, id);
      return input.kind === "source" ? { ...input, body: { ...input.body, conversationType: type } } : input;
    };
    const frozen = slice(["one", "two"]);
    expect(packetOf(frozen, storeAll([typed("m1", "direct"), typed("m2", "direct"), typed("m3", "group")])).conversationType).toBe("direct");
    expect(packetOf(frozen, storeAll([typed("m1", "direct"), typed("m2", "group"), typed("m3", "direct")])).conversationType).toBe("group");
  });

  it("holds exactly the frozen turns of any log, as rendered, and always parses", () => {
    fc.assert(
      fc.property(logArb, policyArb, fc.integer({ min: 0, max: 200 }), (log, fold, retain) => {
        const groups = groupTurns(reconstruct(log, fold).filter((t) => t.group > 0));
        const frozen = freezeSlice(groups, policy({ retainInputChars: retain }), agent.context);
        if (!frozen.ok) return true;
        const packet = packetSchema.safeParse(packetOf(frozen.value, log));
        return (
          packet.success &&
          packet.data.frozen.turns.map((t) => t.id).join() === frozen.value.turns.map((t) => t.id).join() &&
          packet.data.frozen.turns.every((t, i) => t.rendered === renderSliceLine(frozen.value.turns[i]!))
        );
      }),
    );
  });
});
