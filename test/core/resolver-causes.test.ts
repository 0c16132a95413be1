import { describe, expect, it } from "vitest";
import { hashCanonical, sha256Hex } from "../../src/core/hash";
import type { AnchoredRow, ResolverFailureCode } from "../../src/core/resolver";
import { verifyAnchor, verifyHead, verifySettledHead } from "../../src/core/resolver";
import { anchorOf, content, FIRST, FIRST_EVIDENCE, FIRST_PACKET, OTHER, SECOND, SECOND_EVIDENCE, SECOND_PACKET, withHead, withPacket, withPlan, withPrevious } from "./resolver-fixture";

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
