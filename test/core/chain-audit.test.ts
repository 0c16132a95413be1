import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CheckName } from "../../src/core/chain-audit";
import { CHECK_NAMES } from "../../src/core/chain-audit";
import { sha256Hex } from "../../src/core/hash";
import type { Packet } from "../../src/core/packet";
import { LEGACY_PACKET_FORMAT, PACKET_FORMAT } from "../../src/core/packet";
import { renderLegacySliceLine } from "../../src/core/render";
import type { World } from "./chain-audit-fixture";
import { AGENT, audit, buildLink, chain, check, EPOCH, expectPagesAgree, failures, frozenTurn, LOG, mutableBody, OFFLINE, world } from "./chain-audit-fixture";
import { edit, stored } from "./event-builders";

describe("auditChain: a chain built the way the engine builds it", () => {
  it("passes every check on every link of a valid three-link chain", () => {
    const links = chain();
    const report = audit(world(links));
    expect(report.valid).toBe(true);
    expectPagesAgree(world(links));
    expect(report.epochs).toHaveLength(1);
    const [epoch] = report.epochs;
    expect(epoch?.current).toBe(true);
    expect(epoch?.valid).toBe(true);
    expect(epoch?.links.map((l) => [l.boundaryId, l.position, l.current, l.valid])).toEqual([
      ["bnd_run-1", 1, true, true],
      ["bnd_run-2", 2, true, true],
      ["bnd_run-3", 3, true, true],
    ]);
    for (const link of epoch?.links ?? []) {
      expect(link.checks.map((c) => c.name)).toEqual([...CHECK_NAMES]);
      expect(link.checks.every((c) => c.ok && c.detail === undefined)).toBe(true);
    }
    // The fixture really chains: what each link names is its predecessor's stored row.
    expect(links[1].row.previousId).toBe(links[0].row.id);
    expect(links[2].row.previousHash).toBe(links[1].row.hash);
  });

  it("still verifies a link whose packet predates platform ids in slice lines, by that packet's own line format", () => {
    const legacy = (p: Packet): Packet => ({
      ...p,
      format: LEGACY_PACKET_FORMAT,
      frozen: { ...p.frozen, turns: p.frozen.turns.map(({ messageId: _id, ...t }) => ({ ...t, rendered: renderLegacySliceLine(t) })) },
    });
    const links = chain({ 1: { mutate: legacy } });
    expect(audit(world(links)).valid).toBe(true);
    // Each format is held to its own lines: legacy lines under the current format do not pass.
    const mislabelled = chain({ 1: { mutate: (p) => ({ ...legacy(p), format: PACKET_FORMAT }) } });
    expect(check(audit(world(mislabelled)), "bnd_run-1", "frozen_turns_match_log").ok).toBe(false);
  });

  it("does not let a correction made after a run invalidate the boundary that froze the older text", () => {
    const links = chain();
    const later = [...LOG, stored(13, { ...edit("m1", "Evening! Shall we plan the offsite?"), idempotencyKey: "k13" })];
    expect(audit(world(links, { log: later })).valid).toBe(true);
    expectPagesAgree(world(links, { log: later }));
    // The same edit before the first run's trigger is history that run should have frozen.
    const earlier = [...LOG.slice(0, 5), stored(6, { ...edit("m1", "Evening! Shall we plan the offsite?"), idempotencyKey: "k6" })];
    const moved = [...earlier, ...LOG.slice(5).map((e) => ({ ...e, seq: e.seq + 1 }))];
    const report = audit(world(links, { log: moved }));
    expectPagesAgree(world(links, { log: moved }));
    expect(check(report, "bnd_run-1", "frozen_turns_match_log").ok).toBe(false);
  });

  it("reads a page's slice with what it needs from before its range: an edit logged before its message", () => {
    // m6 (seq 8, frozen by the third link) is edited by an event at seq 4, before the third link's
    // range of the log begins: only the lookup of related events finds it.
    const early = LOG.map((e) => (e.seq === 4 ? stored(4, { ...edit("m6", "Flights are approved already."), idempotencyKey: "k4" }) : e));
    const w = world(chain(), { log: early });
    const report = audit(w);
    expect(failures(report)["bnd_run-3"]).toContain("frozen_turns_match_log");
    expectPagesAgree(w);
  });

  it("never puts conversation text in the report", () => {
    const links = chain({ 2: { mutate: (p) => ({ ...p, frozen: { ...p.frozen, turns: p.frozen.turns.map((t) => (t.id === "s5" ? frozenTurn({ ...t, text: "SECRET EDIT" }) : t)) } }) } });
    const w = world(links);
    const body = mutableBody(links[0].row);
    (body["content"] as Record<string, unknown>)["summary"] = "SECRET SUMMARY";
    w.boundaries[0] = { ...links[0].row, body };
    const text = JSON.stringify(audit(w));
    expect(text).toContain("frozen_turns_match_log");
    for (const secret of ["SECRET", "Lisbon", "Summary of link", "offsite"]) expect(text).not.toContain(secret);
  });
});

describe("auditChain: each corruption fails exactly the check aimed at it", () => {
  interface Case {
    readonly name: string;
    readonly make: () => World;
    readonly expected: Record<string, CheckName[]>;
    readonly detail?: RegExp;
  }

  const cases: Case[] = [
    {
      name: "edited body text kept with the old hash",
      make: () => {
        const links = chain();
        const w = world(links);
        const body = mutableBody(links[1].row);
        (body["content"] as Record<string, unknown>)["summary"] = "A rewritten summary.";
        w.boundaries[1] = { ...links[1].row, body };
        return w;
      },
      expected: { "bnd_run-2": ["body_hash"] },
      detail: /hashCanonical\(body\) differs/,
    },
    {
      name: "a wrong previous hash (bound consistently from a bad packet)",
      make: () => world(chain({ 2: { mutate: (p) => ({ ...p, previousBoundary: p.previousBoundary && { ...p.previousBoundary, hash: sha256Hex("not the predecessor") } }) } })),
      expected: { "bnd_run-2": ["link"] },
      detail: /is stored with hash/,
    },
    {
      name: "a missing previous boundary",
      make: () => {
        const w = world(chain());
        w.boundaries.splice(0, 1);
        return w;
      },
      expected: { "bnd_run-2": ["link"] },
      detail: /bnd_run-1 is missing/,
    },
    {
      name: "a fork: two complete boundaries after one predecessor",
      make: () => {
        const links = chain();
        const sibling = buildLink({ n: 20, position: 2, triggerSeq: 9, throughSeq: 6, previous: links[0], summary: "Another take on the same slice." });
        const w = world([...links, sibling]);
        return w;
      },
      expected: { "bnd_run-2": ["no_fork"], "bnd_run-20": ["no_fork"] },
      detail: /bnd_run-20 also follow bnd_run-1; bnd_run-20 also hold position 2/,
    },
    {
      name: "coverage that does not advance (the same groups frozen again)",
      make: () => world(chain({ 2: { throughSeq: 2, after: 0 } })),
      expected: { "bnd_run-2": ["coverage_advances"] },
      detail: /covers through 2, not past/,
    },
    {
      name: "a slice that advances but re-freezes groups the previous boundary covers",
      make: () => world(chain({ 2: { after: 0 } })),
      expected: { "bnd_run-2": ["coverage_advances"] },
      detail: /re-freezes turns at or before 2: s1, s2, p3/,
    },
    {
      name: "a plan naming another copy of the packet",
      make: () => {
        const links = chain();
        const w = world(links);
        w.bucket.set("packets/elsewhere.json", links[1].packetText);
        w.plans.set(links[1].plan.runId, { ...links[1].plan, packetKey: "packets/elsewhere.json" });
        return w;
      },
      expected: { "bnd_run-2": ["plan"] },
      detail: /the plan's packet is packets\/elsewhere.json/,
    },
    {
      name: "a plan naming a different packet (another run's)",
      make: () => {
        const links = chain();
        const w = world(links);
        w.plans.set(links[1].plan.runId, { ...links[1].plan, packetKey: links[0].packetKey, packetHash: links[0].plan.packetHash });
        return w;
      },
      expected: { "bnd_run-2": ["plan", "packet_binding"] },
    },
    {
      name: "a tampered packet in R2 (the packet checks cannot run on it)",
      make: () => {
        const links = chain();
        const w = world(links);
        w.bucket.set(links[1].packetKey, links[1].packetText.replace("Lisbon then", "Porto then"));
        return w;
      },
      expected: { "bnd_run-2": ["packet_hash", "packet_binding", "frozen_turns_match_log"] },
      detail: /hash_mismatch/,
    },
    {
      name: "a frozen turn whose text is not the log's",
      make: () =>
        world(chain({ 2: { mutate: (p) => ({ ...p, frozen: { ...p.frozen, turns: p.frozen.turns.map((t) => (t.id === "s5" ? frozenTurn({ ...t, text: "Porto then." }) : t)) } }) } })),
      expected: { "bnd_run-2": ["frozen_turns_match_log"] },
      detail: /s5 \(text, hash, rendered\)/,
    },
    {
      name: "a frozen slice that silently drops a turn",
      make: () => world(chain({ 1: { mutate: (p) => ({ ...p, frozen: { ...p.frozen, turns: p.frozen.turns.filter((t) => t.id !== "p3") } }) } })),
      expected: { "bnd_run-1": ["frozen_turns_match_log"] },
      detail: /missing from the frozen slice: p3/,
    },
    {
      name: "no completed run event",
      make: () => {
        const w = world(chain());
        const index = w.runs.findIndex((r) => r.runId === "cmp_run-2" && r.status === "completed");
        w.runs.splice(index, 1);
        return w;
      },
      expected: { "bnd_run-2": ["completed_run"] },
      detail: /no completed run event for cmp_run-2/,
    },
    {
      name: "a completed run from someone other than the compactor",
      make: () => {
        const w = world(chain());
        const index = w.runs.findIndex((r) => r.runId === "cmp_run-2" && r.status === "completed");
        w.runs[index] = { runId: "cmp_run-2", status: "completed", agentId: AGENT, boundaryId: "bnd_run-2", anchor: null };
        return w;
      },
      expected: { "bnd_run-2": ["completed_run"] },
      detail: /not the compactor helper.compactor/,
    },
    {
      name: "a language-model receipt with a blank model",
      make: () => world(chain({ 2: { model: { ...OFFLINE, provider: "openai-compatible", model: " " } } })),
      expected: { "bnd_run-2": ["model_evidence"] },
      detail: /no model/,
    },
  ];

  it.each(cases)("$name", ({ make, expected, detail }) => {
    const report = audit(make());
    expect(failures(report)).toEqual(expected);
    expect(report.valid).toBe(false);
    expect(report.epochs[0]?.valid).toBe(false);
    if (detail !== undefined) {
      const details = report.epochs.flatMap((e) => e.links).flatMap((l) => l.checks.map((c) => c.detail ?? ""));
      expect(details.some((d) => detail.test(d))).toBe(true);
    }
  });

  it.each(cases)("reports the same links a page at a time: $name", ({ make }) => {
    expectPagesAgree(make());
  });

  it("reports the packet checks as not checked when the packet is unreadable, rather than as agreeing", () => {
    const links = chain();
    const w = world(links);
    w.bucket.delete(links[2].packetKey);
    const report = audit(w);
    expect(check(report, "bnd_run-3", "packet_hash")).toEqual({ name: "packet_hash", ok: false, detail: `packet ${links[2].packetKey}: missing` });
    expect(check(report, "bnd_run-3", "packet_binding").detail).toBe("not checked: the packet could not be read (missing)");
    expect(check(report, "bnd_run-3", "frozen_turns_match_log").detail).toBe("not checked: the packet could not be read (missing)");
  });

  it("reports a hand-forced row that is not a boundary without throwing", () => {
    const links = chain();
    const w = world(links);
    w.boundaries.push({ ...links[2].row, id: "bnd_forced", position: 4, previousId: "bnd_run-3", runId: "cmp_forced", body: {} });
    w.boundaries.push({ ...links[2].row, id: "bnd_not_json", position: 5, previousId: "bnd_forced", runId: "cmp_not_json", body: undefined });
    const report = audit(w);
    const forced = failures(report)["bnd_forced"] ?? [];
    expect(forced).toEqual(expect.arrayContaining(["body_hash", "link", "plan", "completed_run", "model_evidence"]));
    expect(check(report, "bnd_forced", "body_hash").detail).toBe("the stored body does not match the boundary event schema");
    expect(check(report, "bnd_not_json", "body_hash").detail).toBe("the stored body is not JSON");
    expect(failures(report)["bnd_run-3"]).toBeUndefined();
  });
});

describe("auditChain: epochs", () => {
  it("lists the current epoch first (even empty) and a retired one as not current, still audited", () => {
    const links = chain();
    const report = audit(world(links, { currentEpochId: "foldline-compactor/1:new" }));
    expect(report.currentEpochId).toBe("foldline-compactor/1:new");
    expect(report.epochs.map((e) => [e.epochId, e.current, e.valid, e.links.length])).toEqual([
      ["foldline-compactor/1:new", true, true, 0],
      [EPOCH.id, false, true, 3],
    ]);
    expect(report.epochs[1]?.links.every((l) => !l.current && l.valid)).toBe(true);
    expect(report.valid).toBe(true);
    expectPagesAgree(world(links, { currentEpochId: "foldline-compactor/1:new" }));
  });

  it("judges links only within their own epoch: a predecessor in another epoch is missing", () => {
    const links = chain();
    const w = world(links);
    w.boundaries[0] = { ...links[0].row, epochId: "foldline-compactor/1:other" };
    const report = audit(w);
    expect(report.epochs.map((e) => e.epochId)).toEqual([EPOCH.id, "foldline-compactor/1:other"]);
    expect(failures(report)["bnd_run-2"]).toEqual(["link"]);
    // The moved row itself no longer matches its body's epoch, its plan's, or the epoch its receipt anchored.
    expect(failures(report)["bnd_run-1"]).toEqual(["body_hash", "plan", "completed_run"]);
    expectPagesAgree(w);
  });
});

describe("auditChain: properties", () => {
  /** Hundreds of whole audits: seconds on a loaded machine, past vitest's default 5 s timeout. */
  const HEAVY = 60_000;

  /** One variant per leaf of a JSON value, each leaf changed. */
  function leafVariants(value: unknown, path = ""): { path: string; value: unknown }[] {
    if (Array.isArray(value)) {
      if (value.length === 0) return [{ path, value: ["added"] }];
      return value.flatMap((item: unknown, i) => leafVariants(item, `${path}[${i}]`).map((v) => ({ path: v.path, value: value.map((x: unknown, j) => (j === i ? v.value : x)) })));
    }
    if (value !== null && typeof value === "object") {
      return Object.entries(value).flatMap(([key, item]) =>
        leafVariants(item, path === "" ? key : `${path}.${key}`).map((v) => ({ path: v.path, value: { ...value, [key]: v.value } })),
      );
    }
    if (value === null) return [{ path, value: "was null" }];
    if (typeof value === "string") return [{ path, value: `${value}x` }];
    if (typeof value === "number") return [{ path, value: value + 1 }];
    return [{ path, value: !value }];
  }

  const links = chain();
  const variants = leafVariants(links[1].row.body);

  it("any single change to a stored body under its old hash fails body_hash and invalidates the chain", () => {
    expect(variants.length).toBeGreaterThan(50);
    fc.assert(
      fc.property(fc.constantFrom(...variants), ({ value }) => {
        const w = world(links);
        w.boundaries[1] = { ...links[1].row, body: value };
        const report = audit(w);
        expect(check(report, "bnd_run-2", "body_hash").ok).toBe(false);
        expect(report.valid).toBe(false);
      }),
      { numRuns: 200 },
    );
  }, HEAVY);

  it("the report does not depend on the order rows arrive in", () => {
    const w = world([...links, buildLink({ n: 20, position: 2, triggerSeq: 9, throughSeq: 6, previous: links[0], summary: "A fork." })]);
    const reference = audit(w);
    fc.assert(
      fc.property(fc.shuffledSubarray(w.boundaries, { minLength: w.boundaries.length, maxLength: w.boundaries.length }), (shuffled) => {
        expect(audit({ ...w, boundaries: shuffled })).toEqual(reference);
      }),
      { numRuns: 50 },
    );
  }, HEAVY);
});
