import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { ChainAudit, VerifiedLinkPage } from "../../src/api/chain";
import type { StoredBoundary } from "../../src/storage/shard/boundaries";
import type { ErrorBody } from "../integration/helpers";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "../integration/helpers";
import { settledChain } from "./chain";
import { register } from "./declarations";
import { readIncidents } from "./reads";
import { shardOf } from "./shards";

/**
 * A conversation whose agent has settled a chain of boundaries, verified and served, for tests
 * that then edit trusted storage behind the service's back and check that it fails closed.
 */

let counter = 0;

export async function setup() {
  const conversation = freshConversation();
  const agentId = `anchor-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, admitSensitive: true })).status).toBe(201);
  return { conversation, agentId, token };
}

/**
 * Each message states a fact of its own (a guest, a room, a price): the offline compactor folds
 * restatements of one fact into its latest value, so a thread of one fact restated settles into a
 * one-line boundary, and how many compactions follow would depend on timing.
 */
const line = (i: number): string => `Message ${i}: guest ${i} stays in room ${100 + i} in ${i % 2 === 0 ? "Lisbon" : "Porto"}, budget ${1000 + i * 10} euros, flights included.`;

export async function say(token: string, conversation: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, line(i)) })).status).toBe(201);
}

/**
 * Talks in rounds until the settled chain holds `boundaries` boundaries. How many boundaries one
 * burst of messages yields depends on how fast the queue runs beside it (a slow run freezes more at
 * once), so each round waits for the chain to settle before the next one speaks.
 */
export async function chainOf(token: string, conversation: string, agentId: string, boundaries: number): Promise<StoredBoundary[]> {
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
export async function anchoredChain(boundaries: number) {
  const { conversation, agentId, token } = await setup();
  const chain = await chainOf(token, conversation, agentId, boundaries);
  const head = chain.at(-1);
  if (head === undefined) throw new Error("no head");
  return { conversation, agentId, token, chain, head };
}

/**
 * A hand edit of trusted storage on the conversation's shard: the immutability triggers of `table`
 * (`boundaries`, `log`) are dropped around it, as a person with database access could.
 */
export async function behindTheServicesBack(shard: D1Database, table: "boundaries" | "log", statements: D1PreparedStatement[]): Promise<void> {
  const guard = (op: "update" | "delete") =>
    shard.prepare(`CREATE TRIGGER ${table}_immutable_${op} BEFORE ${op.toUpperCase()} ON ${table} BEGIN SELECT RAISE(ABORT, '${table}: rows are immutable'); END`);
  await shard.batch([
    shard.prepare(`DROP TRIGGER ${table}_immutable_update`),
    shard.prepare(`DROP TRIGGER ${table}_immutable_delete`),
    ...statements,
    guard("update"),
    guard("delete"),
  ]);
}

export const contextPath = (conversation: string, agentId: string): string => `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${encodeURIComponent(agentId)}`;

export async function verify(token: string, conversation: string, agentId: string): Promise<ChainAudit> {
  const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify?agent=${encodeURIComponent(agentId)}`, { token });
  expect(res.status).toBe(200);
  return json<ChainAudit>(res);
}

export async function pages(token: string, conversation: string, agentId: string, limit: number): Promise<VerifiedLinkPage[]> {
  const all: VerifiedLinkPage[] = [];
  for (let after: number | null = 0; after !== null; ) {
    const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify/links?agent=${encodeURIComponent(agentId)}&after=${after}&limit=${limit}`, { token });
    expect(res.status).toBe(200);
    const page = await json<VerifiedLinkPage>(res);
    all.push(page);
    after = page.nextAfter;
  }
  return all;
}

/** After a restart the object rebuilds its state from storage; storage alone must not decide what is served. */
export async function restart(conversation: string): Promise<void> {
  await evictDurableObject(env.CONVERSATION.get(env.CONVERSATION.idFromName(conversation)));
}

export async function expectContextRefused(token: string, conversation: string, agentId: string, reason: string): Promise<void> {
  const res = await call("GET", contextPath(conversation, agentId), { token });
  expect(res.status).toBe(409);
  expect((await json<ErrorBody>(res)).error).toMatchObject({ code: "chain_invalid", reason });
  const incidents = await readIncidents(await shardOf(conversation), conversation, 10);
  expect(incidents.some((i) => i.kind === "resolver_failure" && i.code === reason && i.agentId === agentId)).toBe(true);
}
