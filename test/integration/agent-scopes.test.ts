import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import worker from "../../src/index";
import type { ReplyJob } from "../../src/core/jobs";
import type { ReceivedRequest } from "../fake-bot/server";
import { pair } from "../support/declarations";
import { waitFor } from "../support/chain";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, logRows, sourceEvent, tokenFor } from "./helpers";

/**
 * A token reaches only what its scopes name, also through an agent: declaring or reading an agent
 * needs `agent:<id>` and conversation scopes containing every source pattern the agent has and
 * would have; what an agent produces lands only where its sources admit it.
 */

/** This file's own session of the fake bot (test/fake-bot): other files run beside it. */
const botOrigin = `${inject("fakeBotOrigin")}/s/agent-scopes`;
let counter = 0;
const unique = (name: string): string => `${name}-${Date.now().toString(36)}-${counter++}`;

async function declarationRows(agentId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM declarations WHERE agent_id = ?").bind(agentId).first<{ n: number }>();
  return row?.n ?? 0;
}

async function botRequests(): Promise<ReceivedRequest[]> {
  return (await (await fetch(`${botOrigin}/__requests`)).json()) as ReceivedRequest[];
}

function registration(agentId: string, sources: readonly string[], reply: Record<string, unknown> = { mode: "none" }) {
  const base = pair({ agentId, sources, trigger: 50_000, retain: 20_000 });
  return { agent: { ...base.agent, reply }, compactor: base.compactor };
}

/** A reply job for the conversation's first message, delivered to the consumer as `queue` would; returns the acked ids. */
async function deliverReplyJob(queue: string, conversationId: string, agentId: string, attempts: number): Promise<string[]> {
  const job: ReplyJob = { type: "reply", conversationId, agentId, sourceSeq: 1, sourceMessageId: "1" };
  const batch = createMessageBatch(queue, [{ id: "forged-reply", timestamp: new Date(), attempts, body: job }]);
  const ctx = createExecutionContext();
  await worker.queue(batch, env);
  return (await getQueueResult(batch, ctx)).explicitAcks;
}

beforeEach(async () => {
  await fetch(`${botOrigin}/__reset`, { method: "POST" });
});

describe("declaring an agent stays inside the caller's scopes", () => {
  it("refuses an agent-only token that names another tenant's conversations as sources, and writes nothing", async () => {
    const agentId = unique("agentA");
    const tenantB = unique("api:tenantB");
    const attacker = await tokenFor(`agent:${agentId}`);
    const reply = { mode: "http", url: `${botOrigin}/steal`, secret: "BOT_HMAC_SECRET" };
    const res = await call("PUT", `/v1/agents/${agentId}`, { token: attacker, body: registration(agentId, [`${tenantB}:*`, "telegram:*"], reply) });
    expect(res.status).toBe(403);
    const body = await json<ErrorBody>(res);
    expect(body.error.code).toBe("forbidden");
    expect(body.error.message).toContain(`${tenantB}:*`);
    expect(await declarationRows(agentId)).toBe(0);

    // Tenant B's own traffic reaches no agent the attacker declared.
    const conversation = `${tenantB}:chat`;
    const tenantToken = await tokenFor(`${tenantB}:*`);
    expect((await call("POST", eventsPath(conversation), { token: tenantToken, body: sourceEvent("b-1", "1", "tenant B's secret") })).status).toBe(201);
    expect((await logRows(conversation)).map((r) => r.kind)).toEqual(["source"]);
    expect(await botRequests()).toEqual([]);
  });

  it("refuses a pattern wider than the caller's, and accepts one inside it", async () => {
    const agentId = unique("narrow");
    const tenant = unique("api:tenantN");
    const token = await tokenFor(`agent:${agentId}`, `${tenant}:team1:*`);
    for (const sources of [[`${tenant}:*`], ["*"], [`${tenant}:team1`, `${tenant}:team2:*`]]) {
      const res = await call("PUT", `/v1/agents/${agentId}`, { token, body: registration(agentId, sources) });
      expect(res.status, JSON.stringify(sources)).toBe(403);
    }
    expect(await declarationRows(agentId)).toBe(0);
    const res = await call("PUT", `/v1/agents/${agentId}`, { token, body: registration(agentId, [`${tenant}:team1:*`, `${tenant}:team1:x`]) });
    expect(res.status).toBe(201);
  });

  it("judges every change against the caller's scopes now: a narrower token can neither widen nor touch an agent a wider one moved", async () => {
    const agentId = unique("moved");
    const tenant = unique("api:tenantM");
    const narrow = await tokenFor(`agent:${agentId}`, `${tenant}:a:*`);
    const wide = await tokenFor(`agent:${agentId}`, `${tenant}:*`);
    expect((await call("PUT", `/v1/agents/${agentId}`, { token: narrow, body: registration(agentId, [`${tenant}:a:*`]) })).status).toBe(201);
    // The wider token may widen it.
    expect((await call("PUT", `/v1/agents/${agentId}`, { token: wide, body: registration(agentId, [`${tenant}:*`]) })).status).toBe(201);
    // Now the narrower token may not read it, re-narrow it, or reach its memory and documents: to it
    // the agent is one it may not act on, which answers as an agent that does not exist.
    for (const [method, path, body] of [
      ["GET", `/v1/agents/${agentId}`, undefined],
      ["PUT", `/v1/agents/${agentId}`, registration(agentId, [`${tenant}:a:*`])],
      ["GET", `/v1/agents/${agentId}/memory`, undefined],
      ["PUT", `/v1/agents/${agentId}/memory/notes/a`, { content: "planted" }],
    ] as const) {
      const res = await call(method, path, { token: narrow, ...(body === undefined ? {} : { body }) });
      expect(res.status, `${method} ${path}`).toBe(404);
      const text = await res.text();
      expect(text, `${method} ${path}`).toContain("not_found");
      expect(text, `${method} ${path}`).not.toContain(`${tenant}:*`);
    }
    // A document upload answers as it would for a free id (its own receipt) and stores nothing.
    const planted = await call("PUT", `/v1/agents/${agentId}/documents/identity`, { token: narrow, body: { content: "planted" } });
    expect(planted.status).toBe(201);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM documents WHERE agent_id = ?").bind(agentId).first<{ n: number }>()).toEqual({ n: 0 });
    expect((await env.DOCUMENTS.list({ prefix: `documents/${agentId}/` })).objects).toEqual([]);
    expect(await declarationRows(agentId)).toBe(2);
    // The agent keeps running as the wider token declared it: a message in the wider range is preflighted.
    const conversation = `${tenant}:b:chat`;
    expect((await call("POST", eventsPath(conversation), { token: wide, body: sourceEvent("m-1", "1", "hello") })).status).toBe(201);
    await waitFor(async () => ((await logRows(conversation)).some((r) => r.kind === "run") ? true : undefined), "the compactor's preflight run");
  });
});

describe("reply secrets live in their own namespace", () => {
  it.each(["OPENAI_API_KEY", "OPENAI_API_KEY_FAKE", "TELEGRAM_WEBHOOK_SECRET_7001", "TELEGRAM_BOT_TOKEN_7001", "BOT_HMAC_", "MY_BOT_HMAC"])(
    "refuses %s with a 422 that names the namespace, and writes nothing",
    async (secret) => {
      const conversation = freshConversation("api:secrets");
      const agentId = unique("secret");
      const token = await tokenFor(conversation, `agent:${agentId}`);
      const res = await call("PUT", `/v1/agents/${agentId}`, { token, body: registration(agentId, [conversation], { mode: "http", url: `${botOrigin}/reply`, secret }) });
      expect(res.status).toBe(422);
      const body = await json<ErrorBody>(res);
      expect(body.error.code).toBe("secret_outside_namespace");
      expect(body.error.message).toContain("BOT_HMAC_");
      expect(await declarationRows(agentId)).toBe(0);
    },
  );

  it("accepts a BOT_HMAC_<NAME> secret", async () => {
    const conversation = freshConversation("api:secrets");
    const agentId = unique("secret-ok");
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const res = await call("PUT", `/v1/agents/${agentId}`, { token, body: registration(agentId, [conversation], { mode: "http", url: `${botOrigin}/reply`, secret: "BOT_HMAC_SECRET" }) });
    expect(res.status).toBe(201);
  });
});

describe("errors say nothing the caller may not see", () => {
  it("id_in_use, for an id held by a declaration the caller could read anyway, does not name the agent that holds it", async () => {
    const holder = unique("holder");
    const sharedCompactor = unique("cmp");
    const admin = await tokenFor("*");
    const holderConversation = freshConversation("api:holder");
    const holderPair = registration(holder, [holderConversation]);
    const held = { agent: { ...holderPair.agent, compactorId: sharedCompactor }, compactor: { ...holderPair.compactor, id: sharedCompactor } };
    expect((await call("PUT", `/v1/agents/${holder}`, { token: admin, body: held })).status).toBe(201);

    const other = unique("other");
    const conversation = freshConversation("api:other");
    // The caller may act on the holder (its agent scope and sources); one that may not gets the
    // answer an agent it may not act on gets (the describe block above).
    const token = await tokenFor(conversation, holderConversation, `agent:${other}`, `agent:${holder}`);
    const mine = registration(other, [conversation]);
    const res = await call("PUT", `/v1/agents/${other}`, {
      token,
      body: { agent: { ...mine.agent, compactorId: sharedCompactor }, compactor: { ...mine.compactor, id: sharedCompactor } },
    });
    expect(res.status).toBe(409);
    const text = await res.text();
    expect(text).toContain("id_in_use");
    expect(text).not.toContain(holder);
    expect(await declarationRows(other)).toBe(0);
  });
});

describe("an agent the caller may not act on is, to it, an agent that does not exist", () => {
  /** Another tenant's agent, declared by an operator, with a document and a memory page of its own. */
  async function otherTenantsAgent() {
    const agentId = unique("theirs");
    const tenant = unique("api:tenantT");
    const admin = await tokenFor("*");
    expect((await call("PUT", `/v1/agents/${agentId}`, { token: admin, body: registration(agentId, [`${tenant}:*`]) })).status).toBe(201);
    const document = await json<{ hash: string }>(await call("PUT", `/v1/agents/${agentId}/documents/identity`, { token: admin, body: { content: "their identity" } }));
    expect((await call("PUT", `/v1/agents/${agentId}/memory/notes/plan`, { token: admin, body: { content: "their plan" } })).status).toBe(201);
    return { agentId, tenant, documentHash: document.hash };
  }

  /** What a caller can observe of one answer: status, code, and the body with the agent id it named taken out. */
  async function observed(res: Response, agentId: string): Promise<{ status: number; code: string | undefined; body: string }> {
    const text = await res.text();
    const code = res.status >= 400 ? (JSON.parse(text) as ErrorBody).error.code : undefined;
    return { status: res.status, code, body: text.replaceAll(agentId, "<agent>") };
  }

  it("an agent:* token gets the same answer for another tenant's agent as for an id nobody declared, on every agent route", async () => {
    const theirs = await otherTenantsAgent();
    const nobody = unique("nobody");
    const mine = unique("api:tenantU");
    const token = await tokenFor("agent:*", `${mine}:*`);
    const conversation = `${mine}:chat`;
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("u-1", "1", "hello") })).status).toBe(201);
    const routes = (agentId: string) =>
      [
        ["GET", `/v1/agents/${agentId}`, undefined],
        ["GET", `/v1/agents/${agentId}/documents/identity/${theirs.documentHash}`, undefined],
        ["GET", `/v1/agents/${agentId}/memory/notes/plan`, undefined],
        ["PUT", `/v1/agents/${agentId}/memory/notes/plan`, { content: "planted" }],
        ["DELETE", `/v1/agents/${agentId}/memory/notes/plan`, undefined],
        ["GET", `/v1/conversations/${encodeURIComponent(conversation)}/memory/search?agent=${agentId}&q=plan`, undefined],
      ] as const;
    const theirRoutes = routes(theirs.agentId);
    const nobodyRoutes = routes(nobody);
    for (const [i, [method, path, body]] of theirRoutes.entries()) {
      const [, unknownPath, unknownBody] = nobodyRoutes[i] ?? [];
      const exists = await observed(await call(method, path, { token, ...(body === undefined ? {} : { body }) }), theirs.agentId);
      const absent = await observed(await call(method, unknownPath ?? "", { token, ...(unknownBody === undefined ? {} : { body: unknownBody }) }), nobody);
      expect([exists.status, exists.code], `${method} ${path}`).toEqual([absent.status, absent.code]);
      expect(exists.status, `${method} ${path}`).toBe(404);
      expect(exists.body, `${method} ${path}`).not.toContain(theirs.tenant);
      expect(exists.body, `${method} ${path}`).not.toContain("their");
    }
    // The agent's own answer, body and all, is the one an undeclared id gets.
    const read = await observed(await call("GET", `/v1/agents/${theirs.agentId}`, { token }), theirs.agentId);
    expect(read).toEqual(await observed(await call("GET", `/v1/agents/${nobody}`, { token }), nobody));
    // Nothing was planted or removed.
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM memory_page_versions WHERE agent_id = ?").bind(theirs.agentId).first<{ n: number }>();
    expect(rows?.n).toBe(1);
  });

  it("registering a pair that names another tenant's compactor id is refused exactly as naming their agent is, and never as id_in_use", async () => {
    const theirs = await otherTenantsAgent();
    const mine = unique("api:tenantV");
    const token = await tokenFor("agent:*", `${mine}:*`);
    const agentId = unique("mine");
    const base = registration(agentId, [`${mine}:*`]);
    const taken = `${theirs.agentId}.compactor`;
    const stealing = { agent: { ...base.agent, compactorId: taken }, compactor: { ...base.compactor, id: taken } };

    const compactorTaken = await observed(await call("PUT", `/v1/agents/${agentId}`, { token, body: stealing }), agentId);
    const agentTaken = await observed(await call("PUT", `/v1/agents/${theirs.agentId}`, { token, body: registration(theirs.agentId, [`${mine}:*`]) }), theirs.agentId);
    expect(compactorTaken).toEqual(agentTaken);
    expect(compactorTaken.code).not.toBe("id_in_use");
    expect(compactorTaken.body).not.toContain(theirs.agentId);
    expect(compactorTaken.body).not.toContain(taken);
    expect(await declarationRows(agentId)).toBe(0);
    // Their agent's own id named as my compactor's: the same answer again.
    const asCompactor = { agent: { ...base.agent, compactorId: theirs.agentId }, compactor: { ...base.compactor, id: theirs.agentId } };
    expect(await observed(await call("PUT", `/v1/agents/${agentId}`, { token, body: asCompactor }), agentId)).toEqual(compactorTaken);
    // With free ids the same request is registered.
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: base })).status).toBe(201);
  });
});

describe("what an agent produces lands only where its sources admit it", () => {
  it("a reply job for a conversation outside the agent's sources writes nothing there and sends nothing", async () => {
    const tenantA = unique("api:tenantR");
    const agentId = unique("replier");
    const token = await tokenFor(`${tenantA}:*`, `agent:${agentId}`);
    const reply = { mode: "http", url: `${botOrigin}/reply`, secret: "BOT_HMAC_SECRET" };
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: registration(agentId, [`${tenantA}:*`], reply) })).status).toBe(201);

    const outside = freshConversation(unique("api:tenantS"));
    const outsideToken = await tokenFor(outside);
    expect((await call("POST", eventsPath(outside), { token: outsideToken, body: sourceEvent("s-1", "1", "not for agent A") })).status).toBe(201);
    const before = await logRows(outside);

    expect(await deliverReplyJob("foldline-compaction", outside, agentId, 1)).toEqual(["forged-reply"]);
    expect(await logRows(outside)).toEqual(before);
    expect(await botRequests()).toEqual([]);
  });

  it("a dead-lettered reply job for a conversation outside an allowlisted agent's sources posts no failure notice there", async () => {
    // `tg-failing` is on the test config's direct-reply allowlist.
    const agentId = "tg-failing";
    const chat = 770_000 + Math.floor(Math.random() * 10_000);
    const served = `telegram:7001:${chat}`;
    const outside = `telegram:7001:${chat + 1}`;
    const token = await tokenFor("telegram:7001:*", `agent:${agentId}`);
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: registration(agentId, [served], { mode: "builtin" }) })).status).toBeLessThan(300);
    expect((await call("POST", eventsPath(outside), { token, body: sourceEvent("o-1", "1", "someone else's chat") })).status).toBe(201);
    const before = await logRows(outside);

    expect(await deliverReplyJob("foldline-compaction-dlq", outside, agentId, 5)).toEqual(["forged-reply"]);
    expect(await logRows(outside)).toEqual(before);
  });
});
