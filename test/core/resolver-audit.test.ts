import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AuditBoundary, AuditRun, ChainAuditReport } from "../../src/core/chain-audit";
import { CHECK_NAMES, newestAnchor } from "../../src/core/chain-audit";
import { canonicalJson, hashCanonical, sha256Hex } from "../../src/core/hash";
import type { Packet } from "../../src/core/packet";
import { packetSchema } from "../../src/core/packet";
import type { HeadCheckName, HeadEvidence } from "../../src/core/resolver";
import { HEAD_CHECK_ORDER, HEAD_CHECKS, verifyAnchor, verifyHeadAgainstLog } from "../../src/core/resolver";
import type { World } from "./chain-audit-fixture";
import { AGENT, audit, chain, EPOCH, FRONTIER, PROMPT, world } from "./chain-audit-fixture";
import { CONVERSATION } from "./event-builders";

/**
 * One verifier. The resolver runs the head through the audit's own checks (its frozen slice
 * against the log included) and through its own; here both judge the same stored world. For any single
 * corruption of a valid head link — any field of its row, its body, its predecessor's row, its
 * plan, its packet, its receipt, or a competing row — the resolver refuses the head exactly when
 * the audit finds something wrong with that link (or with the epoch's anchor, or with the
 * predecessor's own body, which the resolver also checks), and it names the first of those checks
 * in its own order, with that check's cause and code.
 */

/** The packet the engine would hand the resolver: read from the bucket and verified against the plan's hash. */
function verifiedPacket(w: World, key: string, hash: string): Packet | undefined {
  const text = w.bucket.get(key);
  if (text === undefined || sha256Hex(text) !== hash) return undefined;
  const parsed = packetSchema.safeParse(JSON.parse(text) as unknown);
  return parsed.success ? parsed.data : undefined;
}

/** What the engine reads for a head (`readHeadRows`), over the in-memory world. */
function headEvidence(w: World, head: AuditBoundary): HeadEvidence {
  const plan = w.plans.get(head.runId);
  return {
    conversationId: CONVERSATION,
    agentId: AGENT,
    epoch: EPOCH,
    promptHash: sha256Hex(PROMPT),
    historyAgents: [AGENT],
    admitSensitive: false,
    frontier: { id: FRONTIER.id, hash: FRONTIER.hash },
    head,
    previous: head.previousId === "" ? undefined : w.boundaries.find((b) => b.id === head.previousId),
    rivals: w.boundaries.filter((b) => b !== head && b.epochId === head.epochId && (b.previousId === head.previousId || b.position === head.position)),
    plan,
    packet: plan === undefined ? undefined : verifiedPacket(w, plan.packetKey, plan.packetHash),
    receipts: w.runs.filter((r) => r.runId === head.runId && r.status === "completed"),
    anchor: newestAnchor(w.runs, head.epochId),
  };
}

/** Every check the audit fails that bears on the head, by the resolver's names for them. */
function auditFailures(w: World, report: ChainAuditReport, head: AuditBoundary): Set<HeadCheckName> {
  const links = report.epochs.flatMap((e) => e.links);
  const failed = new Set<HeadCheckName>();
  for (const c of links.find((l) => l.boundaryId === head.id && l.position === head.position)?.checks ?? []) {
    if (!c.ok) failed.add(c.name);
  }
  const previous = links.find((l) => l.boundaryId === head.previousId);
  if (previous?.checks.some((c) => c.name === "body_hash" && !c.ok) === true) failed.add("previous_body");
  const epoch = report.epochs.find((e) => e.epochId === head.epochId);
  if (epoch?.anchor.ok === false) {
    const body = head.body as { content?: unknown } | undefined;
    const verdict = verifyAnchor(newestAnchor(w.runs, head.epochId), {
      id: head.id,
      epochId: head.epochId,
      position: head.position,
      hash: head.hash,
      contentHash: body?.content === undefined ? undefined : hashCanonical(body.content),
    });
    if (!verdict.ok) failed.add(verdict.error.check);
  }
  return failed;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = readonly (string | number)[];

/** Every leaf path of a JSON value. */
function leafPaths(value: unknown, path: Path = []): Path[] {
  if (Array.isArray(value)) return value.flatMap((item: unknown, i) => leafPaths(item, [...path, i]));
  if (value !== null && typeof value === "object") return Object.entries(value).flatMap(([key, item]) => leafPaths(item, [...path, key]));
  return [path];
}

function withLeaf<T>(value: T, path: Path, leaf: Json): T {
  const copy = structuredClone(value) as unknown as Record<string | number, unknown>;
  let node: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path.at(-1);
  if (last === undefined) return leaf as T;
  node[last] = leaf;
  return copy as unknown as T;
}

/** A replacement for a leaf: a near miss of what was there, or anything at all (possibly the same value). */
const replacement = (original: unknown): fc.Arbitrary<Json> =>
  fc.oneof(
    fc.constant(typeof original === "string" ? `${original}x` : typeof original === "number" ? original + 1 : typeof original === "boolean" ? !original : "was null"),
    fc.string({ maxLength: 6 }),
    fc.integer({ min: -1, max: 20 }),
    fc.boolean(),
    fc.constant(null),
  );

interface Corrupted {
  readonly name: string;
  readonly w: World;
  readonly head: AuditBoundary;
}

/** A counterexample is reported by its name, not the whole world it was made in. */
const named = (c: Corrupted): Corrupted => Object.assign(c, { [fc.toStringMethod]: () => c.name });

/** A valid world of `length` links and its head, before any corruption. */
function valid(length: 1 | 3): { w: World; head: AuditBoundary } {
  const w = world(chain().slice(0, length));
  const head = w.boundaries[length - 1];
  if (head === undefined) throw new Error("no head");
  return { w, head };
}

const valueAt = (value: unknown, path: Path): unknown => path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], value);

/** One corruption of one field (or one row) the checks read, in a fresh copy of a valid world. */
function corruption(length: 1 | 3): fc.Arbitrary<Corrupted> {
  const base = valid(length);
  const headIndex = length - 1;
  const headRow = base.head;
  const plan = base.w.plans.get(headRow.runId);
  const receiptIndex = base.w.runs.findIndex((r) => r.runId === headRow.runId && r.status === "completed");
  const packetKey = plan?.packetKey ?? "";
  const packetJson = JSON.parse(base.w.bucket.get(packetKey) ?? "null") as unknown;

  const rowLeaf = (index: number, label: string): fc.Arbitrary<Corrupted>[] => {
    const row = base.w.boundaries[index];
    if (row === undefined) return [];
    const paths = [...["id", "epochId", "position", "previousId", "previousHash", "coveredThroughSeq", "runId", "hash"].map((k) => [k]), ...leafPaths(row.body).map((p) => ["body", ...p])];
    return [
      fc.constantFrom(...paths).chain((path) =>
        replacement(valueAt(row, path)).map((leaf): Corrupted => {
          const w = world(chain().slice(0, length));
          const changed = withLeaf(w.boundaries[index], path, leaf) as AuditBoundary;
          w.boundaries[index] = changed;
          return { name: `${label}.${path.join(".")} = ${JSON.stringify(leaf)}`, w, head: w.boundaries[headIndex] ?? changed };
        }),
      ),
    ];
  };

  const planLeaf = fc.constantFrom(...leafPaths(plan)).chain((path) =>
    replacement(valueAt(plan, path)).map((leaf): Corrupted => {
      const { w, head } = valid(length);
      w.plans.set(head.runId, withLeaf(w.plans.get(head.runId), path, leaf) as NonNullable<typeof plan>);
      return { name: `plan.${path.join(".")} = ${JSON.stringify(leaf)}`, w, head };
    }),
  );

  const receiptLeaf = fc.constantFrom(...leafPaths(base.w.runs[receiptIndex])).chain((path) =>
    replacement(valueAt(base.w.runs[receiptIndex], path)).map((leaf): Corrupted => {
      const { w, head } = valid(length);
      w.runs[receiptIndex] = withLeaf(w.runs[receiptIndex], path, leaf) as AuditRun;
      return { name: `receipt.${path.join(".")} = ${JSON.stringify(leaf)}`, w, head };
    }),
  );

  const packetLeaf = fc.constantFrom(...leafPaths(packetJson)).chain((path) =>
    replacement(valueAt(packetJson, path)).map((leaf): Corrupted => {
      const { w, head } = valid(length);
      w.bucket.set(packetKey, canonicalJson(withLeaf(packetJson, path, leaf)));
      return { name: `packet.${path.join(".")} = ${JSON.stringify(leaf)}`, w, head };
    }),
  );

  const removals = fc.constantFrom(
    ...[
      { name: "the plan row deleted", change: (w: World, head: AuditBoundary) => void w.plans.delete(head.runId) },
      { name: "the packet deleted from R2", change: (w: World) => void w.bucket.delete(packetKey) },
      { name: "the completed receipt missing", change: (w: World) => void w.runs.splice(receiptIndex, 1) },
      { name: "the predecessor row deleted", change: (w: World) => void (length > 1 && w.boundaries.splice(headIndex - 1, 1)) },
      { name: "a rival after the same predecessor", change: (w: World, head: AuditBoundary) => void w.boundaries.push({ ...head, id: "bnd_rival", runId: "cmp_rival", position: head.position + 5 }) },
      { name: "a rival at the same position", change: (w: World, head: AuditBoundary) => void w.boundaries.push({ ...head, id: "bnd_rival", runId: "cmp_rival", previousId: "bnd_other", createdAt: "2025-01-01T00:00:00.000Z" }) },
    ].map(({ name, change }) => () => {
      const { w, head } = valid(length);
      change(w, head);
      return { name, w, head };
    }),
  ).map((make): Corrupted => make());

  return fc.oneof(...rowLeaf(headIndex, "head"), ...rowLeaf(headIndex - 1, "previous"), planLeaf, receiptLeaf, packetLeaf, removals).map(named);
}

describe("the resolver and the audit agree on the head", () => {
  it("names every check the audit makes, the frozen slice against the log included, and nothing it cannot map", () => {
    for (const name of CHECK_NAMES) expect(HEAD_CHECK_ORDER).toContain(name);
    expect(new Set(HEAD_CHECK_ORDER).size).toBe(HEAD_CHECK_ORDER.length);
    for (const name of HEAD_CHECK_ORDER) expect(HEAD_CHECKS[name].cause).toMatch(/^[a-z_]+$/);
  });

  it.each([1, 3] as const)("a valid head of a %i-link chain passes both", (length) => {
    const { w, head } = valid(length);
    expect(audit(w).valid).toBe(true);
    expect(verifyHeadAgainstLog(headEvidence(w, head), w.log)).toEqual({ ok: true });
  });

  it.each([1, 3] as const)("any single corruption of a %i-link chain's head fails the resolver iff it fails the audit, for the same reason", (length) => {
    let failures = 0;
    const seen = new Set<HeadCheckName>();
    fc.assert(
      fc.property(corruption(length), ({ name, w, head }) => {
        const failed = auditFailures(w, audit(w), head);
        const verdict = verifyHeadAgainstLog(headEvidence(w, head), w.log);
        const first = HEAD_CHECK_ORDER.find((check) => failed.has(check));
        expect({ name, refused: !verdict.ok }).toEqual({ name, refused: failed.size > 0 });
        if (verdict.ok || first === undefined) return;
        failures += 1;
        seen.add(first);
        expect({ name, check: verdict.error.check }).toEqual({ name, check: first });
        expect(verdict.error).toMatchObject(HEAD_CHECKS[first]);
        expect(verdict.error.field).not.toBe("");
      }),
      { numRuns: 400 },
    );
    // Most corruptions are caught: the property is not satisfied by a world nothing fails in.
    expect(failures).toBeGreaterThan(150);
    // …and by many different checks, not one that every corruption happens to trip.
    expect(seen.size).toBeGreaterThanOrEqual(length === 3 ? 7 : 5);
  });
});
