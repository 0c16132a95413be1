import { describe, expect, it } from "vitest";
import type { Boundary, ModelEvidence } from "../../src/core/boundary";
import { buildBoundary } from "../../src/core/boundary";
import { hashCanonical, sha256Hex } from "../../src/core/hash";
import type { CompactionContent, Packet } from "../../src/core/packet";
import { OUTPUT_CONTRACT } from "../../src/core/packet";
import type { AnchoredRow, HeadEvidence, ResolverFailureCode } from "../../src/core/resolver";
import { verifyAnchor, verifyHead, verifySettledHead } from "../../src/core/resolver";
import type { TurnSpec } from "../support/packet-fixture";
import { BOB, packetFixture } from "../support/packet-fixture";

// ---------------------------------------------------------------------------------------------
// A real two-link chain: each boundary built by `buildBoundary` from a fixture packet, the second
// naming the first, and the rows, plan and packet the resolver would read for each.

const MODEL: ModelEvidence = {
  provider: "openai-compatible",
  model: "gpt-test-2026-01-01",
  responseId: "resp_1",
  finishReason: "stop",
  usage: { inputTokens: 900, outputTokens: 80 },
  latencyMs: 412,
};

function content(summary: string): CompactionContent {
  return {
    contract: OUTPUT_CONTRACT,
    mode: "plain",
    summary,
    preview: summary,
    salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] },
    degraded: false,
  };
}

const packetKey = (packet: Packet): string => `packets/${packet.runId}.json`;

function boundaryOf(id: string, position: number, packet: Packet, summary: string): Boundary {
  return buildBoundary({ id, position, packet, packetKey: packetKey(packet), packetHash: hashCanonical(packet), content: content(summary), model: MODEL, createdAt: "2026-11-20T12:05:00.000Z" });
}

type StoredLink = HeadEvidence["head"];

/** The boundary's row as D1 stores it. */
function linkOf(boundary: Boundary, previousId: string): StoredLink {
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
function planOf(packet: Packet): NonNullable<HeadEvidence["plan"]> {
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

const FIRST_PACKET = packetFixture({ runId: "run-1" });
const FIRST = boundaryOf("boundary-1", 1, FIRST_PACKET, "Ada chose vendor B; Bob preferred vendor A on price.");

/** A second run whose frozen slice is `turns`, chained to the first boundary. */
function secondPacket(turns: readonly TurnSpec[]): Packet {
  return packetFixture({
    runId: "run-2",
    triggerSeq: 60,
    previousBoundary: { id: FIRST.body.id, hash: FIRST.hash, coveredThroughSeq: FIRST.body.coveredThrough.seq, body: FIRST.body.content.summary },
    turns,
  });
}

const SECOND_TURNS: readonly TurnSpec[] = [
  { text: "Did legal sign the vendor B contract?", group: 20 },
  { text: "Not yet: Bob sent the draft on Monday.", role: "assistant", group: 20 },
  { text: "I'll chase them tomorrow.", author: BOB, group: 23 },
];
const SECOND_PACKET = secondPacket(SECOND_TURNS);
const SECOND = boundaryOf("boundary-2", 2, SECOND_PACKET, "Vendor B contract is with legal; Bob will chase.");

/** A correctly chained second boundary whose slice ends where the first boundary's coverage does. */
const STALLED_PACKET = secondPacket([{ text: "already covered", group: FIRST.body.coveredThrough.seq }]);
const STALLED = boundaryOf("boundary-2", 2, STALLED_PACKET, "repeats the first");

/** What the log says the boundary's run settled. */
const anchorOf = (boundary: Boundary): NonNullable<HeadEvidence["anchor"]> => ({
  epochId: boundary.body.compactor.epochId,
  position: boundary.body.position,
  boundaryId: boundary.body.id,
  boundaryHash: boundary.hash,
  contentHash: hashCanonical(boundary.body.content),
});

/** The completed run event that settled the boundary, as the log holds it. */
const receiptOf = (boundary: Boundary): HeadEvidence["receipts"][number] => ({
  runId: boundary.body.run.id,
  status: "completed",
  agentId: boundary.body.compactorId,
  boundaryId: boundary.body.id,
  anchor: anchorOf(boundary),
});

/** What the resolver is handed when the current declaration is the fixture's. */
function evidence(head: Boundary, packet: Packet, previous: Boundary | undefined): HeadEvidence {
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

const FIRST_EVIDENCE = evidence(FIRST, FIRST_PACKET, undefined);
const SECOND_EVIDENCE = evidence(SECOND, SECOND_PACKET, FIRST);

function failureCode(e: HeadEvidence): ResolverFailureCode | "ok" {
  const verdict = verifyHead(e);
  return verdict.ok ? "ok" : verdict.error.code;
}

/** Evidence with one field of the head's (or the predecessor's) stored link replaced. */
const withHead = (e: HeadEvidence, change: Partial<StoredLink>): HeadEvidence => ({ ...e, head: { ...e.head, ...change } });
function withPrevious(e: HeadEvidence, change: Partial<StoredLink>): HeadEvidence {
  if (e.previous === undefined) throw new Error("this evidence has no predecessor");
  return { ...e, previous: { ...e.previous, ...change } };
}
function withPacket(e: HeadEvidence, change: (p: Packet) => Packet): HeadEvidence {
  if (e.packet === undefined) throw new Error("this evidence has no packet");
  return { ...e, packet: change(e.packet) };
}
function withPlan(e: HeadEvidence, change: Partial<NonNullable<HeadEvidence["plan"]>>): HeadEvidence {
  if (e.plan === undefined) throw new Error("this evidence has no plan");
  return { ...e, plan: { ...e.plan, ...change } };
}

const OTHER = sha256Hex("something else");

// ---------------------------------------------------------------------------------------------

describe("verifyHead: a valid chain", () => {
  it("the fixture chain is what the test says it is: the second boundary names the first by id, hash and coverage", () => {
    expect(FIRST.body.previous).toBeNull();
    expect(SECOND.body.previous).toEqual({ id: "boundary-1", hash: FIRST.hash, coveredThroughSeq: FIRST.body.coveredThrough.seq });
    expect(SECOND_PACKET.previousBoundary?.id).toBe("boundary-1");
    expect(SECOND.body.coveredThrough.seq).toBeGreaterThan(FIRST.body.coveredThrough.seq);
  });

  it("accepts the first boundary of the epoch, starting at its activation frontier", () => {
    expect(verifyHead(FIRST_EVIDENCE)).toEqual({ ok: true });
  });

  it("accepts a second boundary chained to the first", () => {
    expect(verifyHead(SECOND_EVIDENCE)).toEqual({ ok: true });
  });

  it("accepts the declaration's history agents in any order (the boundary holds them sorted)", () => {
    const packet = packetFixture({ runId: "run-1", historyAgents: ["scribe", "helper"] });
    const boundary = boundaryOf("boundary-1", 1, packet, "summary");
    expect(boundary.body.historyAgents).toEqual(["helper", "scribe"]);
    expect(verifyHead({ ...evidence(boundary, packet, undefined), historyAgents: ["scribe", "helper"] })).toEqual({ ok: true });
    expect(verifyHead({ ...evidence(boundary, packet, undefined), historyAgents: ["helper", "scribe"] })).toEqual({ ok: true });
  });

  it("accepts a chain that advances coverage by a single sequence", () => {
    const packet = secondPacket([{ text: "one more", group: FIRST.body.coveredThrough.seq + 1 }]);
    const boundary = boundaryOf("boundary-2", 2, packet, "one more");
    expect(verifyHead(evidence(boundary, packet, FIRST))).toEqual({ ok: true });
  });
});

describe("verifyHead: each failure, one corruption at a time", () => {
  const rows: { code: ResolverFailureCode; name: string; corrupted: () => HeadEvidence }[] = [
    // divergent_hash
    {
      code: "divergent_hash",
      name: "the head's body was edited but its stored hash kept",
      corrupted: () => withHead(SECOND_EVIDENCE, { body: { ...SECOND.body, content: content("Vendor A was chosen.") } }),
    },
    { code: "divergent_hash", name: "the head's stored hash is another value", corrupted: () => withHead(SECOND_EVIDENCE, { hash: OTHER }) },
    { code: "divergent_hash", name: "the head's row disagrees with its body on coverage", corrupted: () => withHead(SECOND_EVIDENCE, { coveredThroughSeq: SECOND.body.coveredThrough.seq + 1 }) },
    { code: "divergent_hash", name: "the head's row disagrees with its body on the run", corrupted: () => withHead(SECOND_EVIDENCE, { runId: "run-9" }) },
    { code: "divergent_hash", name: "the head's row disagrees with its body on the id", corrupted: () => withHead(SECOND_EVIDENCE, { id: "boundary-9" }) },
    { code: "divergent_hash", name: "the head's row disagrees with its body on the predecessor", corrupted: () => withHead(SECOND_EVIDENCE, { previousId: "boundary-x" }) },
    { code: "divergent_hash", name: "a first boundary's row names a predecessor its body does not", corrupted: () => withHead(FIRST_EVIDENCE, { previousId: "boundary-0" }) },
    { code: "divergent_hash", name: "the head's row disagrees with its body on the predecessor's hash", corrupted: () => withHead(SECOND_EVIDENCE, { previousHash: OTHER }) },
    { code: "divergent_hash", name: "the head's row is filed under another epoch than its body", corrupted: () => withHead(SECOND_EVIDENCE, { epochId: "foldline-compactor/0:old" }) },
    {
      code: "divergent_hash",
      name: "the predecessor's body was edited but its stored hash kept",
      corrupted: () => withPrevious(SECOND_EVIDENCE, { body: { ...FIRST.body, content: content("Vendor A was chosen.") } }),
    },
    {
      code: "divergent_hash",
      name: "a first boundary does not start at this epoch's activation frontier",
      corrupted: () => ({ ...FIRST_EVIDENCE, frontier: { ...FIRST_EVIDENCE.frontier, hash: OTHER } }),
    },
    {
      code: "divergent_hash",
      name: "a first boundary starts at another frontier id",
      corrupted: () => ({ ...FIRST_EVIDENCE, frontier: { ...FIRST_EVIDENCE.frontier, id: "frontier-other" } }),
    },
    { code: "divergent_hash", name: "the packet's turnIdsHash differs", corrupted: () => withPacket(SECOND_EVIDENCE, (p) => ({ ...p, frozen: { ...p.frozen, turnIdsHash: OTHER } })) },
    { code: "divergent_hash", name: "the packet's renderedHash differs", corrupted: () => withPacket(SECOND_EVIDENCE, (p) => ({ ...p, frozen: { ...p.frozen, renderedHash: OTHER } })) },
    { code: "divergent_hash", name: "the packet froze through another turn", corrupted: () => withPacket(SECOND_EVIDENCE, (p) => ({ ...p, frozen: { ...p.frozen, throughTurnId: "s1" } })) },
    { code: "divergent_hash", name: "the packet froze through another sequence", corrupted: () => withPacket(SECOND_EVIDENCE, (p) => ({ ...p, frozen: { ...p.frozen, throughSeq: p.frozen.throughSeq + 1 } })) },
    { code: "divergent_hash", name: "the packet belongs to another run", corrupted: () => withPacket(SECOND_EVIDENCE, (p) => ({ ...p, runId: "run-9" })) },
    { code: "divergent_hash", name: "the packet belongs to another epoch", corrupted: () => withPacket(SECOND_EVIDENCE, (p) => ({ ...p, epoch: { ...p.epoch, id: "foldline-compactor/0:old" } })) },
    { code: "divergent_hash", name: "the packet names no previous boundary", corrupted: () => withPacket(SECOND_EVIDENCE, (p) => ({ ...p, previousBoundary: null })) },
    { code: "divergent_hash", name: "the packet is undefined (missing or failed its hash)", corrupted: () => ({ ...SECOND_EVIDENCE, packet: undefined }) },
    { code: "divergent_hash", name: "the log's anchor settled another hash", corrupted: () => ({ ...SECOND_EVIDENCE, anchor: { ...anchorOf(SECOND), boundaryHash: OTHER } }) },
    { code: "divergent_hash", name: "the log's anchor settled other content", corrupted: () => ({ ...SECOND_EVIDENCE, anchor: { ...anchorOf(SECOND), contentHash: OTHER } }) },
    { code: "divergent_hash", name: "the first boundary's packet is undefined", corrupted: () => ({ ...FIRST_EVIDENCE, packet: undefined }) },

    // stale_declaration
    { code: "stale_declaration", name: "the epoch fingerprint differs", corrupted: () => ({ ...SECOND_EVIDENCE, epoch: { ...SECOND_EVIDENCE.epoch, fingerprint: OTHER } }) },
    { code: "stale_declaration", name: "the epoch id differs", corrupted: () => ({ ...SECOND_EVIDENCE, epoch: { ...SECOND_EVIDENCE.epoch, id: "foldline-compactor/2:new" } }) },
    { code: "stale_declaration", name: "the compactor version differs", corrupted: () => ({ ...SECOND_EVIDENCE, epoch: { ...SECOND_EVIDENCE.epoch, compactorVersion: "foldline-compactor/2" } }) },
    { code: "stale_declaration", name: "the prompt hash differs", corrupted: () => ({ ...SECOND_EVIDENCE, promptHash: OTHER }) },
    { code: "stale_declaration", name: "the prompt hash differs (first boundary)", corrupted: () => ({ ...FIRST_EVIDENCE, promptHash: sha256Hex("Another prompt.") }) },

    // wrong_route
    { code: "wrong_route", name: "the conversation id differs", corrupted: () => ({ ...SECOND_EVIDENCE, conversationId: "api:other" }) },
    { code: "wrong_route", name: "the target agent differs", corrupted: () => ({ ...SECOND_EVIDENCE, agentId: "scribe" }) },
    { code: "wrong_route", name: "the privacy admission differs", corrupted: () => ({ ...SECOND_EVIDENCE, admitSensitive: true }) },
    { code: "wrong_route", name: "a history agent was added", corrupted: () => ({ ...SECOND_EVIDENCE, historyAgents: ["helper", "scribe"] }) },
    { code: "wrong_route", name: "the history agents were replaced", corrupted: () => ({ ...SECOND_EVIDENCE, historyAgents: ["scribe"] }) },
    { code: "wrong_route", name: "the history agents are empty", corrupted: () => ({ ...SECOND_EVIDENCE, historyAgents: [] }) },

    // fork
    { code: "fork", name: "the head has one sibling", corrupted: () => ({ ...SECOND_EVIDENCE, rivals: [{ id: "boundary-x", previousId: "boundary-1", position: 2 }] }) },
    { code: "fork", name: "the first boundary has a sibling", corrupted: () => ({ ...FIRST_EVIDENCE, rivals: [{ id: "boundary-x", previousId: "", position: 1 }] }) },
    {
      code: "fork",
      name: "the head has two siblings",
      corrupted: () => ({ ...SECOND_EVIDENCE, rivals: [{ id: "boundary-x", previousId: "boundary-1", position: 2 }, { id: "boundary-y", previousId: "boundary-1", position: 2 }] }),
    },
    { code: "fork", name: "another boundary holds the head's position after another predecessor", corrupted: () => ({ ...SECOND_EVIDENCE, rivals: [{ id: "boundary-x", previousId: "boundary-z", position: 2 }] }) },

    // missing_link
    { code: "missing_link", name: "position 2 with no predecessor found", corrupted: () => ({ ...SECOND_EVIDENCE, previous: undefined }) },
    { code: "missing_link", name: "the predecessor found is another boundary", corrupted: () => withPrevious(SECOND_EVIDENCE, { id: "boundary-x" }) },
    { code: "missing_link", name: "the predecessor sits at the wrong position", corrupted: () => withPrevious(SECOND_EVIDENCE, { position: 2 }) },
    { code: "missing_link", name: "the predecessor stored is not the one the head names by hash", corrupted: () => withPrevious(SECOND_EVIDENCE, { hash: OTHER }) },
    { code: "missing_link", name: "the predecessor stored covers another range than the head names", corrupted: () => withPrevious(SECOND_EVIDENCE, { coveredThroughSeq: FIRST.body.coveredThrough.seq - 1 }) },
    { code: "missing_link", name: "the log anchors a newer boundary than the head", corrupted: () => ({ ...SECOND_EVIDENCE, anchor: { ...anchorOf(SECOND), position: 3, boundaryId: "boundary-3" } }) },

    // non_advancing
    {
      code: "non_advancing",
      name: "the second run froze only turns the first already covers (coverage equal to the predecessor's)",
      corrupted: () => evidence(STALLED, STALLED_PACKET, FIRST),
    },

    // fabricated_run
    { code: "fabricated_run", name: "there is no plan", corrupted: () => ({ ...SECOND_EVIDENCE, plan: undefined }) },
    { code: "fabricated_run", name: "there is no plan (first boundary)", corrupted: () => ({ ...FIRST_EVIDENCE, plan: undefined }) },
    { code: "fabricated_run", name: "the plan is for another agent", corrupted: () => withPlan(SECOND_EVIDENCE, { agentId: "scribe" }) },
    { code: "fabricated_run", name: "the plan is for another conversation", corrupted: () => withPlan(SECOND_EVIDENCE, { conversationId: "api:other" }) },
    { code: "fabricated_run", name: "the plan is for another epoch", corrupted: () => withPlan(SECOND_EVIDENCE, { epochId: "foldline-compactor/0:old" }) },
    { code: "fabricated_run", name: "the plan chains to another predecessor", corrupted: () => withPlan(SECOND_EVIDENCE, { previousBoundaryId: "" }) },
    { code: "fabricated_run", name: "the plan froze another packet key", corrupted: () => withPlan(SECOND_EVIDENCE, { packetKey: "packets/run-9.json" }) },
    { code: "fabricated_run", name: "the plan froze another packet hash", corrupted: () => withPlan(SECOND_EVIDENCE, { packetHash: OTHER }) },
    { code: "fabricated_run", name: "the plan was triggered at another sequence", corrupted: () => withPlan(SECOND_EVIDENCE, { triggerSeq: SECOND_PACKET.triggerSeq + 1 }) },
    { code: "fabricated_run", name: "the plan froze through another sequence", corrupted: () => withPlan(SECOND_EVIDENCE, { throughSeq: SECOND.body.coveredThrough.seq - 1 }) },
    { code: "fabricated_run", name: "the run did not complete", corrupted: () => ({ ...SECOND_EVIDENCE, receipts: [] }) },
    { code: "fabricated_run", name: "the first boundary's run did not complete", corrupted: () => ({ ...FIRST_EVIDENCE, receipts: [] }) },
    { code: "fabricated_run", name: "the run was completed by another agent", corrupted: () => ({ ...SECOND_EVIDENCE, receipts: [{ ...receiptOf(SECOND), agentId: "helper" }] }) },
    { code: "fabricated_run", name: "the log anchors another boundary at the head's position", corrupted: () => ({ ...SECOND_EVIDENCE, anchor: { ...anchorOf(SECOND), boundaryId: "boundary-x" } }) },
  ];

  it.each(rows)("$code: $name", ({ code, corrupted }) => {
    const e = corrupted();
    expect(e).not.toEqual(e.head.position === 1 ? FIRST_EVIDENCE : SECOND_EVIDENCE);
    const verdict = verifyHead(e);
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.error.code).toBe(code);
    expect(verdict.error.message).toContain(e.head.id);
  });

  it("covers every failure code", () => {
    const codes: ResolverFailureCode[] = ["missing_link", "fork", "stale_declaration", "divergent_hash", "wrong_route", "fabricated_run", "non_advancing"];
    expect(new Set(rows.map((r) => r.code))).toEqual(new Set(codes));
  });
});

describe("verifyHead: chains built wrongly from the start", () => {
  it("missing_link: a boundary at position 1 whose body names a predecessor", () => {
    const boundary = boundaryOf("boundary-1b", 1, SECOND_PACKET, "claims to be first");
    expect(boundary.body.previous).not.toBeNull();
    // Its row faithfully records the predecessor the body names.
    expect(failureCode(evidence(boundary, SECOND_PACKET, undefined))).toBe("missing_link");
    // Nor does a row that hides the predecessor: that row disagrees with its hashed body.
    expect(failureCode(withHead(evidence(boundary, SECOND_PACKET, undefined), { previousId: "", previousHash: null }))).toBe("divergent_hash");
  });

  it("missing_link: a boundary at position 2 whose body names no predecessor", () => {
    const boundary = boundaryOf("boundary-2", 2, FIRST_PACKET, "claims to be second");
    expect(failureCode(evidence(boundary, FIRST_PACKET, FIRST))).toBe("missing_link");
  });

  it.each([
    { name: "coverage equal to the predecessor's", group: FIRST.body.coveredThrough.seq },
    { name: "coverage behind the predecessor's", group: FIRST.body.coveredThrough.seq - 5 },
  ])("non_advancing: a correctly chained second boundary with $name", ({ group }) => {
    const packet = secondPacket([{ text: "already covered", group }]);
    const boundary = boundaryOf("boundary-2", 2, packet, "repeats the first");
    expect(boundary.body.coveredThrough.seq).toBeLessThanOrEqual(FIRST.body.coveredThrough.seq);
    expect(failureCode(evidence(boundary, packet, FIRST))).toBe("non_advancing");
  });

  it("stale_declaration: a boundary produced under a retired epoch, verified against the current one", () => {
    const retired = packetFixture({ runId: "run-1", epoch: { id: `foldline-compactor/0:${sha256Hex("old")}`, compactorVersion: "foldline-compactor/0", fingerprint: sha256Hex("old") } });
    const boundary = boundaryOf("boundary-1", 1, retired, "old epoch");
    expect(failureCode({ ...evidence(boundary, retired, undefined), epoch: FIRST_PACKET.epoch })).toBe("stale_declaration");
  });

  it("wrong_route: a boundary built for a sensitive-admitting route, served to one that does not admit", () => {
    const packet = packetFixture({ runId: "run-1", admitSensitive: true });
    const boundary = boundaryOf("boundary-1", 1, packet, "sensitive");
    expect(failureCode({ ...evidence(boundary, packet, undefined), admitSensitive: true })).toBe("ok");
    expect(failureCode(evidence(boundary, packet, undefined))).toBe("wrong_route");
  });
});

describe("verifyHead: trusts only what is hashed", () => {
  // A predecessor row that understates its own coverage must not let through a head that does not
  // advance past the predecessor's real (hashed) coverage.
  it("judges advancement on what the head's hash binds, not on the predecessor row's coveredThroughSeq", () => {
    const honest = evidence(STALLED, STALLED_PACKET, FIRST);
    expect(failureCode(honest)).toBe("non_advancing");
    // One change: the predecessor's row claims one sequence less than its hashed body covers.
    const lying = withPrevious(honest, { coveredThroughSeq: FIRST.body.coveredThrough.seq - 1 });
    expect(failureCode(lying)).toBe("missing_link");
  });
});

describe("verifyAnchor: the newest row against the log's newest anchor", () => {
  const epochId = "foldline-compactor/1:epoch";
  const anchor = { epochId, position: 3, boundaryId: "bnd_3", boundaryHash: sha256Hex("boundary 3"), contentHash: sha256Hex("content 3") };
  const head = { id: "bnd_3", epochId, position: 3, hash: anchor.boundaryHash, contentHash: anchor.contentHash };

  it("passes the head the log anchors, and anything while nothing is anchored", () => {
    expect(verifyAnchor(anchor, head)).toEqual({ ok: true });
    expect(verifyAnchor(undefined, head)).toEqual({ ok: true });
    expect(verifyAnchor(undefined, undefined)).toEqual({ ok: true });
  });

  const cases: { name: string; newest: AnchoredRow | undefined; code: ResolverFailureCode; message: RegExp }[] = [
    { name: "no row at all", newest: undefined, code: "missing_link", message: /bnd_3 at position 3, .* is missing: no boundary of its epoch is stored/ },
    { name: "an older row as the newest", newest: { ...head, id: "bnd_2", position: 2 }, code: "missing_link", message: /the newest stored is bnd_2 at position 2/ },
    { name: "a row of another epoch", newest: { ...head, epochId: "foldline-compactor/1:other" }, code: "missing_link", message: /is missing/ },
    { name: "a newer row no run settled", newest: { ...head, id: "bnd_4", position: 4 }, code: "fabricated_run", message: /bnd_4 at position 4 was settled by no completed run/ },
    { name: "another row at the anchored position", newest: { ...head, id: "bnd_x" }, code: "fabricated_run", message: /bnd_x at position 3 was settled by no completed run/ },
    { name: "a rewritten row with its hash recomputed", newest: { ...head, hash: sha256Hex("rewritten"), contentHash: sha256Hex("rewritten content") }, code: "divergent_hash", message: /another content hash/ },
    { name: "a row rewritten outside its content", newest: { ...head, hash: sha256Hex("rewritten") }, code: "divergent_hash", message: /another hash/ },
    { name: "a body that is not a boundary", newest: { ...head, contentHash: undefined }, code: "divergent_hash", message: /another content hash/ },
  ];

  it.each(cases)("fails closed on $name", ({ newest, code, message }) => {
    const verdict = verifyAnchor(anchor, newest);
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.error.code).toBe(code);
    expect(verdict.error.message).toMatch(message);
  });
});

describe("verifyHead: each condition is named apart, with the field, what was expected and what was found", () => {
  const editedFirst = { ...FIRST.body, content: content("Vendor A was chosen.") };
  const rows = [
    { cause: "body_mismatch", check: "body_hash", corrupted: () => withHead(SECOND_EVIDENCE, { hash: OTHER }), field: "hash", expected: SECOND.hash, found: OTHER },
    {
      cause: "previous_mismatch",
      check: "previous_body",
      corrupted: () => withPrevious(SECOND_EVIDENCE, { body: editedFirst }),
      field: "previous.hash",
      expected: hashCanonical(editedFirst),
      found: FIRST.hash,
    },
    {
      cause: "frontier_mismatch",
      check: "frontier",
      corrupted: () => ({ ...FIRST_EVIDENCE, frontier: { ...FIRST_EVIDENCE.frontier, hash: OTHER } }),
      field: "frontier.hash",
      expected: OTHER,
      found: FIRST_PACKET.frontier.hash,
    },
    {
      cause: "packet_unreadable",
      check: "packet_hash",
      corrupted: () => ({ ...SECOND_EVIDENCE, packet: undefined }),
      field: "packet",
      expected: hashCanonical(SECOND_PACKET),
      found: "missing, altered or not a packet",
    },
    {
      cause: "packet_mismatch",
      check: "packet_binding",
      corrupted: () => withPacket(SECOND_EVIDENCE, (p) => ({ ...p, frozen: { ...p.frozen, throughSeq: p.frozen.throughSeq + 1 } })),
      field: "coveredThrough.seq",
      expected: SECOND.body.coveredThrough.seq + 1,
      found: SECOND.body.coveredThrough.seq,
    },
    {
      cause: "anchor_mismatch",
      check: "anchor_hash",
      corrupted: () => ({ ...SECOND_EVIDENCE, anchor: { ...anchorOf(SECOND), boundaryHash: OTHER } }),
      field: "hash",
      expected: OTHER,
      found: SECOND.hash,
    },
  ] as const;

  it.each(rows)("$cause ($check): $field", ({ cause, check, corrupted, field, expected, found }) => {
    const e = corrupted();
    expect(verifyHead(e)).toEqual({ ok: false, error: { code: "divergent_hash", cause, check, field, expected, found, message: expect.stringContaining(e.head.id) as unknown } });
  });

  it("once one code, now five causes", () => {
    expect(new Set(rows.map((r) => r.cause)).size).toBe(rows.length);
  });

  it("plan_mismatch: the plan's trigger and frozen range are checked against the boundary", () => {
    const verdict = verifyHead(withPlan(SECOND_EVIDENCE, { triggerSeq: 7 }));
    expect(verdict).toMatchObject({ ok: false, error: { code: "fabricated_run", cause: "plan_mismatch", check: "plan", field: "plan.triggerSeq", expected: SECOND_PACKET.triggerSeq, found: 7 } });
  });
});

describe("verifySettledHead: the stored head against the one this chain settled", () => {
  it("passes the settled head, and names any other as a fork", () => {
    expect(verifySettledHead({ id: "boundary-2", hash: SECOND.hash }, { id: "boundary-2", hash: SECOND.hash })).toEqual({ ok: true });
    for (const settled of [undefined, { id: "boundary-1", hash: FIRST.hash }, { id: "boundary-2", hash: OTHER }]) {
      expect(verifySettledHead({ id: "boundary-2", hash: SECOND.hash }, settled)).toMatchObject({ ok: false, error: { code: "fork", cause: "unsettled_head", check: "settled_head" } });
    }
  });
});
