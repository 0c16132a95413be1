import type { Boundary, ModelEvidence } from "../../src/core/boundary";
import { buildBoundary } from "../../src/core/boundary";
import { hashCanonical, sha256Hex } from "../../src/core/hash";
import type { CompactionContent, Packet } from "../../src/core/packet";
import { OUTPUT_CONTRACT } from "../../src/core/packet";
import type { HeadEvidence, ResolverFailureCode } from "../../src/core/resolver";
import { verifyHead } from "../../src/core/resolver";
import type { TurnSpec } from "../support/packet-fixture";
import { BOB, packetFixture } from "../support/packet-fixture";

// ---------------------------------------------------------------------------------------------
// A real two-link chain: each boundary built by `buildBoundary` from a fixture packet, the second
// naming the first, and the rows, plan and packet the resolver would read for each.

export const MODEL: ModelEvidence = {
  provider: "openai-compatible",
  model: "gpt-test-2026-01-01",
  responseId: "resp_1",
  finishReason: "stop",
  usage: { inputTokens: 900, outputTokens: 80 },
  latencyMs: 412,
};

export function content(summary: string): CompactionContent {
  return {
    contract: OUTPUT_CONTRACT,
    mode: "plain",
    summary,
    preview: summary,
    salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] },
    degraded: false,
  };
}

export const packetKey = (packet: Packet): string => `packets/${packet.runId}.json`;

export function boundaryOf(id: string, position: number, packet: Packet, summary: string): Boundary {
  return buildBoundary({ id, position, packet, packetKey: packetKey(packet), packetHash: hashCanonical(packet), content: content(summary), model: MODEL, createdAt: "2026-11-20T12:05:00.000Z" });
}

export type StoredLink = HeadEvidence["head"];

/** The boundary's row as D1 stores it. */
export function linkOf(boundary: Boundary, previousId: string): StoredLink {
  return {
    id: boundary.body.id,
    epochId: boundary.body.compactor.epochId,
    position: boundary.body.position,
    previousId,
    previousHash: boundary.body.previous?.hash ?? null,
    coveredThroughSeq: boundary.body.coveredThrough.seq,
    runId: boundary.body.run.id,
    hash: boundary.hash,
    body: boundary.body,
  };
}

/** The plan the parent froze for the run, written from the packet (not from the boundary). */
export function planOf(packet: Packet): NonNullable<HeadEvidence["plan"]> {
  return {
    runId: packet.runId,
    conversationId: packet.conversationId,
    agentId: packet.agentId,
    epochId: packet.epoch.id,
    previousBoundaryId: packet.previousBoundary?.id ?? "",
    packetKey: packetKey(packet),
    packetHash: hashCanonical(packet),
    triggerSeq: packet.triggerSeq,
    throughSeq: packet.frozen.throughSeq,
  };
}

export const FIRST_PACKET = packetFixture({ runId: "run-1" });
export const FIRST = boundaryOf("boundary-1", 1, FIRST_PACKET, "Ada chose vendor B; Bob preferred vendor A on price.");

/** A second run whose frozen slice is `turns`, chained to the first boundary. */
export function secondPacket(turns: readonly TurnSpec[]): Packet {
  return packetFixture({
    runId: "run-2",
    triggerSeq: 60,
    previousBoundary: { id: FIRST.body.id, hash: FIRST.hash, coveredThroughSeq: FIRST.body.coveredThrough.seq, body: FIRST.body.content.summary },
    turns,
  });
}

export const SECOND_TURNS: readonly TurnSpec[] = [
  { text: "Did legal sign the vendor B contract?", group: 20 },
  { text: "Not yet: Bob sent the draft on Monday.", role: "assistant", group: 20 },
  { text: "I'll chase them tomorrow.", author: BOB, group: 23 },
];
export const SECOND_PACKET = secondPacket(SECOND_TURNS);
export const SECOND = boundaryOf("boundary-2", 2, SECOND_PACKET, "Vendor B contract is with legal; Bob will chase.");

/** A correctly chained second boundary whose slice ends where the first boundary's coverage does. */
export const STALLED_PACKET = secondPacket([{ text: "already covered", group: FIRST.body.coveredThrough.seq }]);
export const STALLED = boundaryOf("boundary-2", 2, STALLED_PACKET, "repeats the first");

/** What the log says the boundary's run settled. */
export const anchorOf = (boundary: Boundary): NonNullable<HeadEvidence["anchor"]> => ({
  epochId: boundary.body.compactor.epochId,
  position: boundary.body.position,
  boundaryId: boundary.body.id,
  boundaryHash: boundary.hash,
  contentHash: hashCanonical(boundary.body.content),
});

/** The completed run event that settled the boundary, as the log holds it. */
export const receiptOf = (boundary: Boundary): HeadEvidence["receipts"][number] => ({
  runId: boundary.body.run.id,
  status: "completed",
  agentId: boundary.body.compactorId,
  boundaryId: boundary.body.id,
  anchor: anchorOf(boundary),
});

/** What the resolver is handed when the current declaration is the fixture's. */
export function evidence(head: Boundary, packet: Packet, previous: Boundary | undefined): HeadEvidence {
  return {
    conversationId: "api:fixture",
    agentId: "helper",
    epoch: FIRST_PACKET.epoch,
    promptHash: sha256Hex(FIRST_PACKET.prompt),
    historyAgents: ["helper"],
    admitSensitive: false,
    frontier: { id: FIRST_PACKET.frontier.id, hash: FIRST_PACKET.frontier.hash },
    head: linkOf(head, head.body.previous?.id ?? ""),
    previous: previous === undefined ? undefined : linkOf(previous, previous.body.previous?.id ?? ""),
    rivals: [],
    plan: planOf(packet),
    packet,
    receipts: [receiptOf(head)],
    anchor: anchorOf(head),
  };
}

export const FIRST_EVIDENCE = evidence(FIRST, FIRST_PACKET, undefined);
export const SECOND_EVIDENCE = evidence(SECOND, SECOND_PACKET, FIRST);

export function failureCode(e: HeadEvidence): ResolverFailureCode | "ok" {
  const verdict = verifyHead(e);
  return verdict.ok ? "ok" : verdict.error.code;
}

/** Evidence with one field of the head's (or the predecessor's) stored link replaced. */
export const withHead = (e: HeadEvidence, change: Partial<StoredLink>): HeadEvidence => ({ ...e, head: { ...e.head, ...change } });
export function withPrevious(e: HeadEvidence, change: Partial<StoredLink>): HeadEvidence {
  if (e.previous === undefined) throw new Error("this evidence has no predecessor");
  return { ...e, previous: { ...e.previous, ...change } };
}
export function withPacket(e: HeadEvidence, change: (p: Packet) => Packet): HeadEvidence {
  if (e.packet === undefined) throw new Error("this evidence has no packet");
  return { ...e, packet: change(e.packet) };
}
export function withPlan(e: HeadEvidence, change: Partial<NonNullable<HeadEvidence["plan"]>>): HeadEvidence {
  if (e.plan === undefined) throw new Error("this evidence has no plan");
  return { ...e, plan: { ...e.plan, ...change } };
}

export const OTHER = sha256Hex("something else");
