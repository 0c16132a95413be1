import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { amendmentEnvelope, amendmentsHash } from "../../src/core/amendments";
import { buildBoundary } from "../../src/core/boundary";
import { groupTurns } from "../../src/core/compaction-plan";
import { renderBoundaryBody } from "../../src/core/compactor-output";
import type { ManifestInput } from "../../src/core/context-manifest";
import { WITHHELD_NOTE, buildContextManifest, contextManifestSchema } from "../../src/core/context-manifest";
import { hashCanonical } from "../../src/core/hash";
import type { Amendment, CompactionContent } from "../../src/core/packet";
import { OUTPUT_CONTRACT } from "../../src/core/packet";
import { reconstruct } from "../../src/core/reconstruction";
import type { NativeMessage } from "../../src/core/render";
import { renderEnvelope } from "../../src/core/render";
import { selectContext } from "../../src/core/selection";
import { packetFixture } from "../support/packet-fixture";
import { CONVERSATION, turn } from "./event-builders";
import { logArb, policyArb } from "./log-arbitraries";

const POLICY = { maxChars: 120_000, maxMessages: 400, maxAmendmentChars: 16_000 };
const groups = groupTurns([turn("s1", 1, "hello"), turn("p2", 1, "hi Ada"), turn("s3", 3, "what did we decide?")]);

const content: CompactionContent = {
  contract: OUTPUT_CONTRACT,
  mode: "projection",
  summary: "Ada and Bob chose vendor B.",
  preview: "Ada and Bob chose vendor B.",
  salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] },
  degraded: false,
};
const model = { provider: "openai-compatible", model: "m-1", responseId: null, finishReason: "stop", usage: null, latencyMs: 5 };
const boundary = buildBoundary({ id: "bnd_1", position: 1, packet: packetFixture(), packetKey: "packets/x", packetHash: "a".repeat(64), content, model, createdAt: "2026-01-01T00:00:00.000Z" });
const head = { ...boundary, position: 1, coveredThroughSeq: boundary.body.coveredThrough.seq, runId: "cmp_1" };
const amendment: Amendment = { turnId: "s1", group: 1, role: "user", kind: "edited", hashBefore: "b".repeat(64), hashAfter: "c".repeat(64), text: "hello again" };

function manifestOf(envelopes: { boundary?: NativeMessage; amendment?: NativeMessage }, overrides: Partial<ManifestInput> = {}) {
  const selected = selectContext({ envelopes: [envelopes.boundary, envelopes.amendment].filter((m) => m !== undefined), groups, policy: POLICY });
  if (!selected.ok) throw new Error(selected.error.message);
  return buildContextManifest({
    conversationId: CONVERSATION,
    agentId: "agent-a",
    epochId: "v1:abc",
    boundary: envelopes.boundary === undefined ? undefined : { head, envelope: envelopes.boundary },
    amendment: envelopes.amendment === undefined ? undefined : { items: [amendment], envelope: envelopes.amendment },
    withheld: false,
    selection: selected.value,
    policy: POLICY,
    ...overrides,
  });
}

describe("buildContextManifest", () => {
  it("names the exact tail and its sizes when there is no boundary", () => {
    const manifest = contextManifestSchema.parse(manifestOf({}));
    expect(manifest).toMatchObject({ boundary: null, amendment: null, withheld: null, reserved: { chars: 0, messages: 0 } });
    expect(manifest.tail).toEqual({ turns: 3, chars: groups[0]!.chars + groups[1]!.chars, firstTurnId: "s1", lastTurnId: "s3", turnIdsHash: hashCanonical(["s1", "p2", "s3"]) });
    expect(manifest.totals).toEqual({ chars: manifest.tail.chars, messages: 3 });
  });

  it("names the served boundary and amendments with their envelopes, and reserves them", () => {
    const boundaryEnvelope = renderEnvelope("boundary", renderBoundaryBody(content));
    const amendmentMessage = amendmentEnvelope([amendment])!;
    const manifest = contextManifestSchema.parse(manifestOf({ boundary: boundaryEnvelope, amendment: amendmentMessage }));
    expect(manifest.boundary).toEqual({
      id: "bnd_1",
      hash: boundary.hash,
      position: 1,
      coveredThroughSeq: head.coveredThroughSeq,
      coveredThroughTurnId: boundary.body.coveredThrough.turnId,
      runId: "cmp_1",
      model: { provider: "openai-compatible", model: "m-1" },
      envelopeChars: boundaryEnvelope.content.length,
    });
    expect(manifest.amendment).toEqual({
      hash: amendmentsHash([amendment]),
      envelopeChars: amendmentMessage.content.length,
      items: [{ turnId: "s1", group: 1, kind: "edited", hashBefore: "b".repeat(64), hashAfter: "c".repeat(64) }],
      content: amendmentMessage.content,
    });
    expect(manifest.reserved).toEqual({ chars: boundaryEnvelope.content.length + amendmentMessage.content.length, messages: 2 });
    expect(manifest.totals.messages).toBe(5);
  });

  it("carries what a call with a query recalled, and no memory key without one", () => {
    const memory = {
      envelopeChars: 120,
      budgetChars: 4_000,
      pages: [{ path: "people/ada", version: 2, contentHash: "d".repeat(64), chars: 40 }],
      turns: [{ turnId: "s1", messageId: "m1", seq: 1, chars: 5 }],
    };
    expect(contextManifestSchema.parse(manifestOf({}, { memory })).memory).toEqual(memory);
    expect(manifestOf({})).not.toHaveProperty("memory");
    expect(manifestOf({}, { memory: undefined })).not.toHaveProperty("memory");
  });

  it("says why a boundary was withheld", () => {
    expect(manifestOf({}, { withheld: true }).withheld).toBe(WITHHELD_NOTE);
  });

  it("always matches its schema, and its counts add up, for any log and caps", () => {
    fc.assert(
      fc.property(logArb, policyArb, fc.integer({ min: 1_000, max: 1_200 }), fc.integer({ min: 2, max: 20 }), (log, fold, maxChars, maxMessages) => {
        const tail = groupTurns(reconstruct(log, fold).filter((t) => t.group > 0));
        const policy = { maxChars, maxMessages, maxAmendmentChars: 500 };
        const selected = selectContext({ envelopes: [], groups: tail, policy });
        if (!selected.ok) return true;
        const manifest = buildContextManifest({
          conversationId: CONVERSATION,
          agentId: "agent-a",
          epochId: "v1:abc",
          boundary: undefined,
          amendment: undefined,
          withheld: false,
          selection: selected.value,
          policy,
        });
        const served = tail.slice(tail.length - selected.value.tail.groups.length).flatMap((g) => g.turns);
        return (
          contextManifestSchema.safeParse(manifest).success &&
          manifest.totals.messages === manifest.reserved.messages + manifest.tail.turns &&
          manifest.totals.chars === manifest.reserved.chars + manifest.tail.chars &&
          manifest.tail.turns + tail.slice(0, manifest.omitted.groups).reduce((n, g) => n + g.turns.length, 0) === tail.reduce((n, g) => n + g.turns.length, 0) &&
          manifest.tail.firstTurnId === (served[0]?.id ?? null)
        );
      }),
    );
  });
});
