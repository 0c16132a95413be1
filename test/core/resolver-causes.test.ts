import { describe, expect, it } from "vitest";
import { hashCanonical, sha256Hex } from "../../src/core/hash";
import type { AnchoredRow, ResolverFailure } from "../../src/core/resolver";
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

  const missing = (found: number | null, stored: string): ResolverFailure => ({
    code: "missing_link",
    cause: "anchored_head_missing",
    check: "anchor_head_stored",
    field: "position",
    expected: 3,
    found,
    message: `boundary bnd_3 at position 3, settled by the log's newest completed run, is missing: ${stored}`,
  });
  const unanchored = (id: string, position: number): ResolverFailure => ({
    code: "fabricated_run",
    cause: "unanchored_head",
    check: "anchor_names_head",
    field: "id",
    expected: "bnd_3",
    found: id,
    message: `boundary ${id} at position ${position} was settled by no completed run; the log's newest settled bnd_3 at position 3`,
  });
  const rewritten = (field: string, expected: string, found: string | null, what: string): ResolverFailure => ({
    code: "divergent_hash",
    cause: "anchor_mismatch",
    check: "anchor_hash",
    field,
    expected,
    found,
    message: `boundary bnd_3 is stored with another ${what} than its completed run settled`,
  });

  // The message is the check's own sentence: no head boundary to name in front of it.
  const cases: { name: string; newest: AnchoredRow | undefined; error: ResolverFailure }[] = [
    { name: "no row at all", newest: undefined, error: missing(null, "no boundary of its epoch is stored") },
    { name: "an older row as the newest", newest: { ...head, id: "bnd_2", position: 2 }, error: missing(2, "the newest stored is bnd_2 at position 2") },
    { name: "a row of another epoch", newest: { ...head, epochId: "foldline-compactor/1:other" }, error: missing(3, "the newest stored is bnd_3 at position 3") },
    { name: "a newer row no run settled", newest: { ...head, id: "bnd_4", position: 4 }, error: unanchored("bnd_4", 4) },
    { name: "another row at the anchored position", newest: { ...head, id: "bnd_x" }, error: unanchored("bnd_x", 3) },
    { name: "the anchored id at a later position", newest: { ...head, position: 4 }, error: unanchored("bnd_3", 4) },
    {
      name: "a rewritten row with its hash recomputed",
      newest: { ...head, hash: sha256Hex("rewritten"), contentHash: sha256Hex("rewritten content") },
      error: rewritten("contentHash", anchor.contentHash, sha256Hex("rewritten content"), "content hash"),
    },
    { name: "a row rewritten outside its content", newest: { ...head, hash: sha256Hex("rewritten") }, error: rewritten("hash", anchor.boundaryHash, sha256Hex("rewritten"), "hash") },
    { name: "a body that is not a boundary", newest: { ...head, contentHash: undefined }, error: rewritten("contentHash", anchor.contentHash, null, "content hash") },
  ];

  it.each(cases)("fails closed on $name", ({ newest, error }) => {
    expect(verifyAnchor(anchor, newest)).toStrictEqual({ ok: false, error });
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

describe("verifyHead: what the head claims to be, field by field, in the sentence the failure is served with", () => {
  const declaration = "boundary boundary-2 fails declaration: produced under another declaration or prompt";
  const route = "boundary boundary-2 fails route: belongs to another route, agent or privacy admission";
  const rows = [
    {
      corrupted: () => ({ ...SECOND_EVIDENCE, epoch: { ...SECOND_EVIDENCE.epoch, id: "foldline-compactor/2:new" } }),
      error: { code: "stale_declaration", cause: "stale_declaration", check: "declaration", field: "compactor.epochId", expected: "foldline-compactor/2:new", found: SECOND.body.compactor.epochId, message: declaration },
    },
    {
      corrupted: () => ({ ...SECOND_EVIDENCE, epoch: { ...SECOND_EVIDENCE.epoch, fingerprint: OTHER } }),
      error: { code: "stale_declaration", cause: "stale_declaration", check: "declaration", field: "compactor.fingerprint", expected: OTHER, found: SECOND.body.compactor.fingerprint, message: declaration },
    },
    {
      corrupted: () => ({ ...SECOND_EVIDENCE, epoch: { ...SECOND_EVIDENCE.epoch, compactorVersion: "foldline-compactor/2" } }),
      error: { code: "stale_declaration", cause: "stale_declaration", check: "declaration", field: "compactor.version", expected: "foldline-compactor/2", found: SECOND.body.compactor.version, message: declaration },
    },
    {
      corrupted: () => ({ ...SECOND_EVIDENCE, promptHash: OTHER }),
      error: { code: "stale_declaration", cause: "stale_declaration", check: "declaration", field: "compactor.promptHash", expected: OTHER, found: SECOND.body.compactor.promptHash, message: declaration },
    },
    {
      corrupted: () => ({ ...SECOND_EVIDENCE, conversationId: "api:other" }),
      error: { code: "wrong_route", cause: "wrong_route", check: "route", field: "conversation.id", expected: "api:other", found: "api:fixture", message: route },
    },
    {
      corrupted: () => ({ ...SECOND_EVIDENCE, agentId: "scribe" }),
      error: { code: "wrong_route", cause: "wrong_route", check: "route", field: "targetAgentId", expected: "scribe", found: "helper", message: route },
    },
    {
      corrupted: () => ({ ...SECOND_EVIDENCE, admitSensitive: true }),
      error: { code: "wrong_route", cause: "wrong_route", check: "route", field: "admitSensitive", expected: true, found: false, message: route },
    },
    {
      corrupted: () => ({ ...SECOND_EVIDENCE, historyAgents: ["scribe", "helper"] }),
      error: { code: "wrong_route", cause: "wrong_route", check: "route", field: "historyAgents", expected: '["helper","scribe"]', found: '["helper"]', message: route },
    },
    {
      corrupted: () => ({ ...FIRST_EVIDENCE, frontier: { ...FIRST_EVIDENCE.frontier, id: "frontier-other" } }),
      error: {
        code: "divergent_hash",
        cause: "frontier_mismatch",
        check: "frontier",
        field: "frontier.id",
        expected: "frontier-other",
        found: FIRST_PACKET.frontier.id,
        message: "boundary boundary-1 fails frontier: does not start at this epoch's activation frontier",
      },
    },
    {
      corrupted: () => withPrevious(SECOND_EVIDENCE, { body: { ...FIRST.body, content: content("Vendor A was chosen.") } }),
      error: {
        code: "divergent_hash",
        cause: "previous_mismatch",
        check: "previous_body",
        field: "previous.hash",
        expected: hashCanonical({ ...FIRST.body, content: content("Vendor A was chosen.") }),
        found: FIRST.hash,
        message: "boundary boundary-2 fails previous_body: previous boundary boundary-1: hashCanonical(body) differs from the stored hash",
      },
    },
  ] as const;

  it.each(rows)("$error.cause: $error.field", ({ corrupted, error }) => {
    expect(verifyHead(corrupted())).toStrictEqual({ ok: false, error });
  });

  it("holds only the first boundary to the epoch's activation frontier: a later one starts where its predecessor ends", () => {
    expect(verifyHead({ ...SECOND_EVIDENCE, frontier: { id: "frontier-other", hash: OTHER } })).toEqual({ ok: true });
  });
});

describe("verifySettledHead: the stored head against the one this chain settled", () => {
  const stored = { id: "boundary-2", hash: SECOND.hash };
  const fork = (field: string, expected: string | null, found: string) => ({
    ok: false,
    error: { code: "fork", cause: "unsettled_head", check: "settled_head", field, expected, found, message: "the stored head boundary-2 is not the head this chain settled" },
  });

  it("passes the settled head", () => {
    expect(verifySettledHead(stored, { id: "boundary-2", hash: SECOND.hash })).toEqual({ ok: true });
  });

  it.each([
    { name: "nothing settled", settled: undefined, verdict: fork("id", null, "boundary-2") },
    { name: "another boundary settled", settled: { id: "boundary-1", hash: FIRST.hash }, verdict: fork("id", "boundary-1", "boundary-2") },
    { name: "another boundary settled with the same hash", settled: { id: "boundary-1", hash: SECOND.hash }, verdict: fork("id", "boundary-1", "boundary-2") },
    { name: "the same id settled with another hash", settled: { id: "boundary-2", hash: OTHER }, verdict: fork("hash", OTHER, SECOND.hash) },
  ])("names a fork when $name, by the field that differs", ({ settled, verdict }) => {
    expect(verifySettledHead(stored, settled)).toStrictEqual(verdict);
  });
});
