import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/core/hash";
import type { HeadEvidence, ResolverFailureCode } from "../../src/core/resolver";
import { verifyHead } from "../../src/core/resolver";
import { packetFixture } from "../support/packet-fixture";
import {
  anchorOf,
  boundaryOf,
  content,
  evidence,
  failureCode,
  FIRST,
  FIRST_EVIDENCE,
  FIRST_PACKET,
  OTHER,
  receiptOf,
  SECOND,
  SECOND_EVIDENCE,
  SECOND_PACKET,
  secondPacket,
  STALLED,
  STALLED_PACKET,
  withHead,
  withPacket,
  withPlan,
  withPrevious,
} from "./resolver-fixture";

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
