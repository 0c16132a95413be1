import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { BoundaryBody } from "../../src/core/boundary";
import { boundaryHash } from "../../src/core/boundary";
import type { ChainAuditReport, LinkPage } from "../../src/core/chain-audit";
import { canonicalJson } from "../../src/core/hash";
import type { StoredBoundary } from "../../src/storage/compaction-store";
import { readChainBoundaries, readIncidents } from "../support/reads";
import { shardOf } from "../support/shards";
import { register } from "../support/declarations";
import { settledChain } from "../support/chain";
import { conversationStub } from "../../src/durable/stub";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * The chain's head is anchored in the append-only log: every completed run names the boundary it
 * settled, with its hash and its content's hash. Boundary rows are trusted storage, but a row
 * deleted or rewritten behind the service's back (here by hand, as an operator with database
 * access could) must fail closed on `/verify`, `/verify/links` and `/context`, also after the
 * conversation's object restarted and rebuilt its state from those very rows.
 */

let counter = 0;

async function setup() {
  const conversation = freshConversation();
  const agentId = `anchor-${Date.now().toString(36)}-${counter++}`;
/**
 * Each message states a fact of its own (a guest, a room, a price): the offline compactor folds
 * restatements of one fact into its latest value, so a thread of one fact restated settles into a
 * one-line boundary, and how many compactions follow would depend on timing.
 */
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, admitSensitive: true })).status).toBe(201);
  return { conversation, agentId, token };
}

const line = (i: number): string => `Message ${i}: guest ${i} stays in room ${100 + i} in ${i % 2 === 0 ? "Lisbon" : "Porto"}, budget ${1000 + i * 10} euros, flights included.`;

async function say(token: string, conversation: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, line(i)) })).status).toBe(201);
}

/**
 * Talks in rounds until the settled chain holds `boundaries` boundaries. How many boundaries one
 * burst of messages yields depends on how fast the queue runs beside it (a slow run freezes more at
 * once), so each round waits for the chain to settle before the next one speaks.
 */
async function chainOf(token: string, conversation: string, agentId: string, boundaries: number): Promise<StoredBoundary[]> {
  const ROUND = 30;
  let chain: StoredBoundary[] = [];
  for (let round = 0; chain.length < boundaries; round++) {
    if (round === 2 * boundaries) throw new Error(`${boundaries} boundaries not reached after ${round} rounds (${chain.length} settled)`);
    await say(token, conversation, round * ROUND, (round + 1) * ROUND);
    ({ chain } = await settledChain(conversation, agentId, Math.min(boundaries, round + 1)));
  }
  // The untouched chain verifies and is served: what fails later is the edit's doing.
  expect((await verify(token, conversation, agentId)).valid).toBe(true);
  expect((await call("GET", contextPath(conversation, agentId), { token })).status).toBe(200);
  return chain;
}

/** A fresh conversation whose chain holds at least `boundaries` boundaries, verified and served. */
async function anchoredChain(boundaries: number) {
  const { conversation, agentId, token } = await setup();
  const chain = await chainOf(token, conversation, agentId, boundaries);
  const head = chain.at(-1);
  if (head === undefined) throw new Error("no head");
  return { conversation, agentId, token, chain, head };
}

/**
 * A hand edit of trusted storage on the conversation's shard: the immutability triggers are dropped
 * around it, as a person with database access could.
 */
async function behindTheServicesBack(shard: D1Database, statements: D1PreparedStatement[]): Promise<void> {
  await shard.batch([
    shard.prepare("DROP TRIGGER boundaries_immutable_update"),
    shard.prepare("DROP TRIGGER boundaries_immutable_delete"),
    ...statements,
    shard.prepare("CREATE TRIGGER boundaries_immutable_update BEFORE UPDATE ON boundaries BEGIN SELECT RAISE(ABORT, 'boundaries: rows are immutable'); END"),
    shard.prepare("CREATE TRIGGER boundaries_immutable_delete BEFORE DELETE ON boundaries BEGIN SELECT RAISE(ABORT, 'boundaries: rows are immutable'); END"),
  ]);
}

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

const contextPath = (conversation: string, agentId: string): string => `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${encodeURIComponent(agentId)}`;

async function verify(token: string, conversation: string, agentId: string): Promise<ChainAuditReport> {
  const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify?agent=${encodeURIComponent(agentId)}`, { token });
  expect(res.status).toBe(200);
  return json<ChainAuditReport>(res);
}

async function pages(token: string, conversation: string, agentId: string, limit: number): Promise<LinkPage[]> {
  const all: LinkPage[] = [];
  for (let after: number | null = 0; after !== null; ) {
    const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify/links?agent=${encodeURIComponent(agentId)}&after=${after}&limit=${limit}`, { token });
    expect(res.status).toBe(200);
    const page = await json<LinkPage>(res);
    all.push(page);
    after = page.nextAfter;
  }
  return all;
}

/** After a restart the object rebuilds its chain from the rows; the rows alone must not decide what is served. */
async function restart(conversation: string): Promise<void> {
  await evictDurableObject(env.CONVERSATION.get(env.CONVERSATION.idFromName(conversation)));
}

async function expectContextRefused(token: string, conversation: string, agentId: string, reason: string): Promise<void> {
  const res = await call("GET", contextPath(conversation, agentId), { token });
  expect(res.status).toBe(409);
  expect((await json<ErrorBody>(res)).error).toMatchObject({ code: "chain_invalid", reason });
  const incidents = await readIncidents(await shardOf(conversation), conversation, 10);
  expect(incidents.some((i) => i.kind === "resolver_failure" && i.code === reason && i.agentId === agentId)).toBe(true);
}

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
    await behindTheServicesBack(shard, [deleteRow(shard, head.body.id)]);
    const report = await expectAuditRefusesHead(token, conversation, agentId, head.body.id, /missing/);
    // What remains is intact, link by link: the finding is the head, not the links.
    expect(report.epochs[0]?.links.every((l) => l.valid)).toBe(true);
    await restart(conversation);
    await expectContextRefused(token, conversation, agentId, "missing_link");
    // The deleted head's plan looks open again to the object rebuilt from the rows: a redelivered job
    // for it is refused (an incident naming the run) rather than settling a replacement head.
    const before = chain.length - 1;
    const settled = await conversationStub(env, conversation).settle(conversation, head.runId, head.body.content, head.body.model);
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
    await behindTheServicesBack(shard, gone.map((b) => deleteRow(shard, b.body.id)));
    const report = await expectAuditRefusesHead(token, conversation, agentId, head.body.id, /missing/);
    expect(report.epochs[0]?.links.map((l) => l.boundaryId)).toEqual(chain.filter((b) => !gone.includes(b)).map((b) => b.body.id));
    await restart(conversation);
    await expectContextRefused(token, conversation, agentId, "missing_link");
  });

  it("fails closed when the head's summary was rewritten and its hash recomputed", async () => {
    const { conversation, agentId, token, head } = await anchoredChain(2);
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, [rewriteRow(shard, rewritten(head)).statement]);
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
    await behindTheServicesBack(shard, statements);
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
    await behindTheServicesBack(shard, [deleteRow(shard, second.body.id)]);
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
    const receipt = shard.prepare("SELECT seq, body FROM events WHERE conversation_id = ? AND idempotency_key = ?").bind(conversation, `run:${only.runId}:completed`);
    const row = await receipt.first<{ seq: number; body: string }>();
    expect(JSON.parse(row?.body ?? "{}")).toMatchObject({ status: "completed", anchor: { boundaryId: only.body.id, boundaryHash: only.hash, position: only.position } });
    await expect(shard.prepare("DELETE FROM events WHERE conversation_id = ? AND seq = ?").bind(conversation, row?.seq).run()).rejects.toThrow(/immutable/);
    // A second receipt anchoring the same position of the epoch (a successor settled after a deleted head) cannot be stored.
    const next = await shard.prepare("SELECT MAX(seq) + 1 AS seq FROM events WHERE conversation_id = ?").bind(conversation).first<{ seq: number }>();
    const twin = (row?.body ?? "").replace(only.body.id, "bnd_twin");
    await expect(
      shard.prepare("INSERT INTO events (conversation_id, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES (?, ?, 'run', 'run:twin:completed', 0, ?, ?, ?)")
        .bind(conversation, next?.seq, twin, "0".repeat(64), new Date().toISOString())
        .run(),
    ).rejects.toThrow(/UNIQUE/);
  });
});
