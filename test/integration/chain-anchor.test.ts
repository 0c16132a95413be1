import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { BoundaryBody } from "../../src/core/boundary";
import { boundaryHash } from "../../src/core/boundary";
import type { ChainAuditReport } from "../../src/core/chain-audit";
import { canonicalJson } from "../../src/core/hash";
import type { StoredBoundary } from "../../src/storage/shard/boundaries";
import { readChainBoundaries, readIncidents } from "../support/reads";
import { shardOf } from "../support/shards";
import { anchoredChain, behindTheServicesBack, chainOf, expectContextRefused, pages, restart, setup, verify } from "../support/anchored-chain";
import { conversationStub } from "../../src/durable/stub";

/**
 * The chain's head is anchored in the append-only log: every completed run names the boundary it
 * settled, with its hash and its content's hash. Boundary rows are trusted storage, but a row
 * deleted or rewritten behind the service's back (here by hand, as an operator with database
 * access could) must fail closed on `/verify`, `/verify/links` and `/context`, also after the
 * conversation's object restarted and rebuilt its state from those very rows.
 */

const deleteRow = (shard: D1Database, id: string): D1PreparedStatement => shard.prepare("DELETE FROM boundaries WHERE id = ?").bind(id);

/** Rewrites a row's body and stores its recomputed hash (and the hash its successor names, when given). */
function rewriteRow(shard: D1Database, body: BoundaryBody): { statement: D1PreparedStatement; hash: string } {
  const hash = boundaryHash(body);
  return { statement: shard.prepare("UPDATE boundaries SET body = ?, hash = ?, previous_hash = ? WHERE id = ?").bind(canonicalJson(body), hash, body.previous?.hash ?? null, body.id), hash };
}

const rewritten = (boundary: StoredBoundary): BoundaryBody => ({
  ...boundary.body,
  content: { ...boundary.body.content, summary: "Everyone agreed to double the budget and skip the vote.", preview: "Everyone agreed to double the budget." },
});

/** The whole audit and every page of it (at two page sizes) report the epoch invalid because of its anchor. */
async function expectAuditRefusesHead(token: string, conversation: string, agentId: string, anchoredId: string, detail: RegExp): Promise<ChainAuditReport> {
  const report = await verify(token, conversation, agentId);
  expect(report.valid).toBe(false);
  const epoch = report.epochs[0];
  expect(epoch?.valid).toBe(false);
  expect(epoch?.anchor).toMatchObject({ ok: false, boundaryId: anchoredId });
  expect(epoch?.anchor.detail).toMatch(detail);
  for (const limit of [1, 50]) {
    const listed = await pages(token, conversation, agentId, limit);
    for (const page of listed) {
      expect(page.anchor).toEqual(epoch?.anchor);
      expect(page.valid).toBe(false);
    }
    expect(listed.flatMap((p) => p.links)).toEqual(epoch?.links);
  }
  return report;
}

describe("the chain's head is anchored in the log", () => {
  it("reports the anchor of an intact chain on the audit and on every page", async () => {
    const { conversation, agentId, token } = await setup();
    const chain = await chainOf(token, conversation, agentId, 2);
    const head = chain.at(-1);
    const report = await verify(token, conversation, agentId);
    expect(report.epochs[0]?.anchor).toEqual({ ok: true, boundaryId: head?.body.id, position: head?.position });
    for (const page of await pages(token, conversation, agentId, 1)) expect(page).toMatchObject({ valid: true, anchor: report.epochs[0]?.anchor });
  });

  it("fails closed when the head row was deleted, also after a restart", async () => {
    const { conversation, agentId, token, chain, head } = await anchoredChain(2);
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "boundaries", [deleteRow(shard, head.body.id)]);
    const report = await expectAuditRefusesHead(token, conversation, agentId, head.body.id, /missing/);
    // What remains is intact, link by link: the finding is the head, not the links.
    expect(report.epochs[0]?.links.every((l) => l.valid)).toBe(true);
    await restart(conversation);
    await expectContextRefused(token, conversation, agentId, "missing_link");
    // The deleted head's plan looks open again to the object rebuilt from the rows: a redelivered job
    // for it is refused (an incident naming the run) rather than settling a replacement head.
    const before = chain.length - 1;
    const settled = await conversationStub(env, conversation).settle(conversation, head.runId, head.body.content, head.body.model, "");
    expect(settled).toMatchObject({ ok: false, error: { code: "chain_invalid" } });
    const refused = (await readIncidents(await shardOf(conversation), conversation, 50)).find((i) => i.kind === "resolver_failure" && i.runId === head.runId);
    if (refused === undefined) throw new Error("no incident for the refused settlement");
    expect(refused.code).toBe("missing_link");
    expect((await readChainBoundaries(await shardOf(conversation), conversation, agentId, head.epochId)).length).toBe(before);
    await expectContextRefused(token, conversation, agentId, "missing_link");
  });

  it.each([
    { name: "the head is pointed back at an older boundary (the newer rows deleted)", boundaries: 3, deleted: (chain: StoredBoundary[]) => chain.slice(-2) },
    { name: "every boundary of the epoch was deleted", boundaries: 1, deleted: (chain: StoredBoundary[]) => chain },
  ])("fails closed when $name", async ({ boundaries, deleted }) => {
    const { conversation, agentId, token, chain, head } = await anchoredChain(boundaries);
    const gone = deleted(chain);
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "boundaries", gone.map((b) => deleteRow(shard, b.body.id)));
    const report = await expectAuditRefusesHead(token, conversation, agentId, head.body.id, /missing/);
    expect(report.epochs[0]?.links.map((l) => l.boundaryId)).toEqual(chain.filter((b) => !gone.includes(b)).map((b) => b.body.id));
    await restart(conversation);
    await expectContextRefused(token, conversation, agentId, "missing_link");
  });

  it("fails closed when the head's summary was rewritten and its hash recomputed", async () => {
    const { conversation, agentId, token, head } = await anchoredChain(2);
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "boundaries", [rewriteRow(shard, rewritten(head)).statement]);
    const report = await expectAuditRefusesHead(token, conversation, agentId, head.body.id, /hash/);
    const link = report.epochs[0]?.links.find((l) => l.boundaryId === head.body.id);
    expect(link?.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(["completed_run"]);
    expect(link?.checks.find((c) => c.name === "completed_run")?.detail).toMatch(/content hash/);
    expect(JSON.stringify(report)).not.toContain("double the budget");
    await restart(conversation);
    await expectContextRefused(token, conversation, agentId, "divergent_hash");
  });

  it("fails closed when an older summary was rewritten and every hash after it recomputed", async () => {
    const { conversation, agentId, token, chain, head } = await anchoredChain(3);
    const shard = await shardOf(conversation);
    // A careful forger keeps every link consistent: rewrite the first, then re-link each successor to the new hash.
    const statements: D1PreparedStatement[] = [];
    let previousHash: string | undefined;
    for (const [i, boundary] of chain.entries()) {
      const before = chain[i - 1];
      const body = i === 0 ? rewritten(boundary) : { ...boundary.body, previous: { id: before?.body.id ?? "", hash: previousHash ?? "", coveredThroughSeq: before?.coveredThroughSeq ?? 0 } };
      const row = rewriteRow(shard, body);
      statements.push(row.statement);
      previousHash = row.hash;
    }
    await behindTheServicesBack(shard, "boundaries", statements);
    const report = await expectAuditRefusesHead(token, conversation, agentId, head.body.id, /hash/);
    // Every rewritten link is named by its own receipt, not only the head (the later ones also by their packets,
    // which still name the original predecessor hashes).
    for (const [i, boundary] of chain.entries()) {
      const failed = report.epochs[0]?.links.find((l) => l.boundaryId === boundary.body.id)?.checks.filter((c) => !c.ok).map((c) => c.name);
      expect(failed).toEqual(i === 0 ? ["completed_run"] : ["packet_binding", "completed_run"]);
    }
    await restart(conversation);
    await expectContextRefused(token, conversation, agentId, "divergent_hash");
  });

  it("reports a deleted middle row at its successor and keeps serving nothing unverified", async () => {
    const { conversation, agentId, token } = await setup();
    const chain = await chainOf(token, conversation, agentId, 3);
    const [second, third] = chain.slice(-2);
    if (second === undefined || third === undefined) throw new Error("expected three boundaries");
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "boundaries", [deleteRow(shard, second.body.id)]);
    const report = await verify(token, conversation, agentId);
    expect(report.valid).toBe(false);
    // The head is still the one the log names; its link to the deleted row is what fails.
    expect(report.epochs[0]?.anchor).toEqual({ ok: true, boundaryId: third.body.id, position: third.position });
    expect(report.epochs[0]?.links.find((l) => l.boundaryId === third.body.id)?.checks.filter((c) => !c.ok).map((c) => c.name)).toContain("link");
    await restart(conversation);
    await expectContextRefused(token, conversation, agentId, "missing_link");
  });

  it("cannot lose or duplicate the anchor itself: the log refuses to delete a receipt or anchor a position twice", async () => {
    const { conversation, agentId, token } = await setup();
    const only = (await chainOf(token, conversation, agentId, 1)).at(-1);
    if (only === undefined) throw new Error("no boundary");
    const shard = await shardOf(conversation);
    const receipt = shard.prepare("SELECT seq, body FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND idempotency_key = ?").bind(conversation, `run:${only.runId}:completed`);
    const row = await receipt.first<{ seq: number; body: string }>();
    expect(JSON.parse(row?.body ?? "{}")).toMatchObject({ status: "completed", anchor: { boundaryId: only.body.id, boundaryHash: only.hash, position: only.position } });
    await expect(shard.prepare("DELETE FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND seq = ?").bind(conversation, row?.seq).run()).rejects.toThrow(/immutable/);
    // A second receipt anchoring the same position of the epoch (a successor settled after a deleted head) cannot be stored.
    const next = await shard.prepare("SELECT MAX(seq) + 1 AS seq FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?)").bind(conversation).first<{ seq: number }>();
    const twin = (row?.body ?? "").replace(only.body.id, "bnd_twin");
    await expect(
      shard.prepare("INSERT INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES ((SELECT id FROM conversation_keys WHERE conversation_id = ?), ?, 'run', 'run:twin:completed', 0, ?, unhex(?), ?)")
        .bind(conversation, next?.seq, twin, "0".repeat(64), Date.now())
        .run(),
    ).rejects.toThrow(/UNIQUE/);
  });
});
