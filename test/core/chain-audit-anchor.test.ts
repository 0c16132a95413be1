import { describe, expect, it } from "vitest";
import type { AuditBoundary, CheckName } from "../../src/core/chain-audit";
import { hashCanonical } from "../../src/core/hash";
import type { World } from "./chain-audit-fixture";
import { audit, buildLink, chain, expectPagesAgree, failures, mutableBody, world } from "./chain-audit-fixture";

describe("auditChain: the head is anchored in the log", () => {
  /** A row rewritten by hand with its hash recomputed, and, when given, the predecessor hash it now names. */
  function rewrite(row: AuditBoundary, change: (body: Record<string, unknown>) => void): AuditBoundary {
    const body = mutableBody(row);
    change(body);
    const previous = body["previous"] as { hash: string } | null;
    return { ...row, body, hash: hashCanonical(body), previousHash: previous?.hash ?? null };
  }
  /** The three-link chain with `count` rows deleted by hand from `start`; the log keeps every receipt. */
  function withoutRows(start: number, count: number): World {
    const w = world(chain());
    w.boundaries.splice(start, count);
    return w;
  }
  const newSummary = (body: Record<string, unknown>): void => {
    (body["content"] as Record<string, unknown>)["summary"] = "Everyone agreed to double the budget.";
  };

  interface AnchorCase {
    readonly name: string;
    readonly make: () => World;
    /** Failing link checks, as in the corruption table. */
    readonly links: Record<string, CheckName[]>;
    readonly anchor: RegExp;
  }

  const cases: AnchorCase[] = [
    {
      name: "the head row deleted",
      make: () => withoutRows(2, 1),
      links: {},
      anchor: /bnd_run-3 at position 3, settled by the log's newest completed run, is missing: the newest stored is bnd_run-2 at position 2/,
    },
    {
      name: "the head pointed back at the first boundary (the newer rows deleted)",
      make: () => withoutRows(1, 2),
      links: {},
      anchor: /bnd_run-3 .* is missing: the newest stored is bnd_run-1 at position 1/,
    },
    {
      name: "every row of the epoch deleted",
      make: () => withoutRows(0, 3),
      links: {},
      anchor: /is missing: no boundary of its epoch is stored/,
    },
    {
      name: "the head's summary rewritten with its hash recomputed",
      make: () => {
        const links = chain();
        const w = world(links);
        w.boundaries[2] = rewrite(links[2].row, newSummary);
        return w;
      },
      links: { "bnd_run-3": ["completed_run"] },
      anchor: /bnd_run-3 is stored with another content hash than its completed run settled/,
    },
    {
      name: "the first summary rewritten and every later link re-hashed to match",
      make: () => {
        const links = chain();
        const w = world(links);
        let previous: AuditBoundary | undefined;
        links.forEach((link, i) => {
          const row = rewrite(link.row, (body) => {
            if (i === 0) newSummary(body);
            else if (previous !== undefined) body["previous"] = { ...(body["previous"] as object), hash: previous.hash };
          });
          w.boundaries[i] = row;
          previous = row;
        });
        return w;
      },
      // The later links' packets in R2 still name the original predecessor hashes, too.
      links: { "bnd_run-1": ["completed_run"], "bnd_run-2": ["packet_binding", "completed_run"], "bnd_run-3": ["packet_binding", "completed_run"] },
      anchor: /bnd_run-3 is stored with another hash than its completed run settled/,
    },
    {
      name: "a newer row that no completed run settled",
      make: () => {
        const links = chain();
        const w = world(links);
        const forged = buildLink({ n: 4, position: 4, triggerSeq: 12, throughSeq: 12, previous: links[2] });
        w.boundaries.push(forged.row);
        w.plans.set(forged.plan.runId, forged.plan);
        w.bucket.set(forged.packetKey, forged.packetText);
        return w;
      },
      links: { "bnd_run-4": ["completed_run"] },
      anchor: /bnd_run-4 at position 4 was settled by no completed run; the log's newest settled bnd_run-3 at position 3/,
    },
  ];

  it.each(cases)("$name", ({ make, links, anchor }) => {
    const report = audit(make());
    expect(failures(report)).toEqual(links);
    expect(report.valid).toBe(false);
    const epoch = report.epochs[0];
    expect(epoch?.valid).toBe(false);
    expect(epoch?.anchor.ok).toBe(false);
    expect(epoch?.anchor.detail).toMatch(anchor);
    expect(JSON.stringify(report)).not.toContain("double the budget");
  });

  it.each(cases)("reports the same anchor on every page: $name", ({ make }) => {
    expectPagesAgree(make());
  });

  it("names the head the log anchors on an intact chain, and ignores other epochs' anchors", () => {
    const links = chain();
    const w = world(links);
    const other = { ...links[0].run, runId: "cmp_other", anchor: { ...(links[0].run.anchor ?? { epochId: "", position: 1, boundaryId: "", boundaryHash: "", contentHash: "" }), epochId: "foldline-compactor/1:other", position: 9 } };
    w.runs.push(other);
    const report = audit(w);
    expect(report.valid).toBe(true);
    expect(report.epochs[0]?.anchor).toEqual({ ok: true, boundaryId: "bnd_run-3", position: 3 });
    expectPagesAgree(w);
  });

  it("leaves a chain settled before runs carried anchors to the link checks", () => {
    const w = world(chain());
    const legacy = { ...w, runs: w.runs.map((r) => ({ ...r, anchor: null })) };
    const report = audit(legacy);
    expect(report.valid).toBe(true);
    expect(report.epochs[0]?.anchor).toEqual({ ok: true, boundaryId: null, position: null });
    expectPagesAgree(legacy);
  });
});
