import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { OpenApiDocument } from "../../src/http/openapi/types";
import { writeMergedVersion } from "../support/extraction";
import { shardsOf } from "../../src/storage/shards";
import { pair } from "../support/declarations";
import { readEventHashes } from "../../src/storage/shard/extractions";
import { placedShardOf } from "../support/shards";
import { call, eventsPath, json, sourceEvent, tokenFor } from "./helpers";

/**
 * The authorization matrix: every operation of the served /openapi.json, called as each kind of
 * caller, with the status each must get, and for every refused call a check that nothing was
 * written (every D1 table's rows and every R2 object, before and after). The rows come from the
 * document: an operation this file has no request for fails the test, so a new route cannot ship
 * without its row.
 */

type Caller = "none" | "otherTenant" | "agentOnly" | "conversationOnly" | "narrower" | "wildcard";
const CALLERS: readonly Caller[] = ["none", "otherTenant", "agentOnly", "conversationOnly", "narrower", "wildcard"];

/** What each kind of route lets each caller do; `allowed` means one of the operation's documented success statuses. */
type Kind = "public" | "telegram" | "conversation" | "conversationAgent" | "agent" | "ops";
const EXPECTED: Record<Kind, Record<Caller, number | "allowed">> = {
  public: { none: "allowed", otherTenant: "allowed", agentOnly: "allowed", conversationOnly: "allowed", narrower: "allowed", wildcard: "allowed" },
  // A bearer token is no Telegram secret, whatever its scopes.
  telegram: { none: 401, otherTenant: 401, agentOnly: 401, conversationOnly: 401, narrower: 401, wildcard: 401 },
  conversation: { none: 401, otherTenant: 403, agentOnly: 403, conversationOnly: "allowed", narrower: "allowed", wildcard: "allowed" },
  // A conversation's extracted memory: the conversation and `agent:<id>`, not every source of the agent.
  conversationAgent: { none: 401, otherTenant: 403, agentOnly: 403, conversationOnly: 403, narrower: "allowed", wildcard: "allowed" },
  // The agent serves `<tenant>:*`: its scope alone, or conversation scopes narrower than its sources,
  // reach nothing, and to those tokens the agent answers as one nobody declared (404, as the security model
  // in docs/SECURITY.md says); a token without the agent scope is refused before anything is read (403).
  agent: { none: 401, otherTenant: 403, agentOnly: 404, conversationOnly: 403, narrower: 404, wildcard: "allowed" },
  // The whole deployment: the `ops` scope or `*`, never a tenant's scopes however wide.
  ops: { none: 401, otherTenant: 403, agentOnly: 403, conversationOnly: 403, narrower: 403, wildcard: "allowed" },
};

/** Operations whose conversation is checked before their agent: a token without the conversation is refused there. */
const CONVERSATION_FIRST: Partial<Record<string, Partial<Record<Caller, number>>>> = {
  searchMemory: { agentOnly: 403 },
  // A document upload for an agent the caller may not act on answers as one for a free id does (the
  // request's own receipt, 201) and stores nothing: the snapshot check below holds it to that.
  putDocument: { agentOnly: 201, narrower: 201 },
};

/** Conversation routes that also act as the agent (its memory pages): they need both scopes. */
const NEEDS_AGENT = new Set(["searchMemory"]);
/** Conversation routes that read the agent's memory of that conversation only: the conversation and `agent:<id>`. */
const NEEDS_AGENT_SCOPE = new Set(["listConversationMemoryPages", "getConversationMemoryPage"]);

function kindOf(path: string, operationId: string, security: readonly Record<string, unknown>[]): Kind {
  const schemes = security.flatMap((s) => Object.keys(s));
  if (schemes.length === 0) return "public";
  if (schemes.includes("telegramSecretToken")) return "telegram";
  if (NEEDS_AGENT.has(operationId)) return "agent";
  if (NEEDS_AGENT_SCOPE.has(operationId)) return "conversationAgent";
  if (path.startsWith("/v1/conversations/")) return "conversation";
  if (path.startsWith("/v1/agents/")) return "agent";
  if (path.startsWith("/v1/ops/")) return "ops";
  throw new Error(`${path}: no authorization kind`);
}

interface World {
  readonly conversation: string;
  readonly agentId: string;
  readonly documentHash: string;
  readonly tokens: Record<Exclude<Caller, "none">, string>;
  /** What the memory routes ask about (a query, a prompt): words of the fact extracted in `main`. */
  readonly probe: string;
}

/** A fact said in the tenant's `main` conversation, as extraction keeps it there. */
const FACT = { path: "extracted/plans/vault", marker: "zephyr7731", probe: "what is the vault code" } as const;

let calls = 0;

/** One request per operation; each call gets fresh keys so an allowed write is a real write. */
const REQUESTS: Record<string, (w: World) => { path: string; body?: unknown }> = {
  appendEvent: (w) => ({ path: eventsPath(w.conversation), body: sourceEvent(`mx-${calls}`, `mx-${calls}`, "matrix") }),
  appendBatch: (w) => ({ path: eventsPath(w.conversation, "/batch"), body: { events: [sourceEvent(`mxb-${calls}`, `mxb-${calls}`, "matrix")] } }),
  listEvents: (w) => ({ path: eventsPath(w.conversation) }),
  listTurns: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/turns` }),
  getContext: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/context?agent=${w.agentId}&query=${encodeURIComponent(w.probe)}` }),
  compose: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/compose`, body: { agent: w.agentId, prompt: { text: w.probe } } }),
  listChain: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/chain?agent=${w.agentId}` }),
  verifyChain: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/verify?agent=${w.agentId}` }),
  verifyLinks: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/verify/links?agent=${w.agentId}` }),
  listIncidents: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/incidents` }),
  opsHealth: () => ({ path: "/v1/ops/health" }),
  listFleetIncidents: () => ({ path: "/v1/ops/incidents" }),
  searchMemory: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/memory/search?agent=${w.agentId}&q=${encodeURIComponent(w.probe)}` }),
  listConversationMemoryPages: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/memory/pages?agent=${w.agentId}` }),
  getConversationMemoryPage: (w) => ({ path: `/v1/conversations/${encodeURIComponent(w.conversation)}/memory/pages/${FACT.path}?agent=${w.agentId}&provenance=1` }),
  putAgent: (w) => ({ path: `/v1/agents/${w.agentId}`, body: registration(w) }),
  getAgent: (w) => ({ path: `/v1/agents/${w.agentId}` }),
  putDocument: (w) => ({ path: `/v1/agents/${w.agentId}/documents/identity-${calls}`, body: { content: `identity ${calls}` } }),
  getDocument: (w) => ({ path: `/v1/agents/${w.agentId}/documents/identity/${w.documentHash}` }),
  listMemoryPages: (w) => ({ path: `/v1/agents/${w.agentId}/memory` }),
  putMemoryPage: (w) => ({ path: `/v1/agents/${w.agentId}/memory/notes/p-${calls}`, body: { content: `page ${calls}` } }),
  getMemoryPage: (w) => ({ path: `/v1/agents/${w.agentId}/memory/notes/kept` }),
  deleteMemoryPage: (w) => ({ path: `/v1/agents/${w.agentId}/memory/notes/doomed` }),
  telegramWebhook: () => ({ path: "/telegram/7001/webhook", body: { update_id: 1 } }),
  serviceIndex: () => ({ path: "/" }),
  health: () => ({ path: "/healthz" }),
  openApiDocument: () => ({ path: "/openapi.json" }),
  reference: () => ({ path: "/reference" }),
};

function registration(w: Pick<World, "conversation" | "agentId">) {
  const tenant = w.conversation.slice(0, w.conversation.lastIndexOf(":"));
  return pair({ agentId: w.agentId, sources: [`${tenant}:*`], trigger: 50_000, retain: 20_000, admitSensitive: true });
}

/** Every row of every table of the control database and of every shard, and every R2 object, as one comparable value. */
async function storageSnapshot(): Promise<string> {
  const parts: string[] = [];
  for (const { name: database, db } of [{ name: "DB", db: env.DB }, ...shardsOf(env)]) {
    const tables = await db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'd1_%' ORDER BY name")
      .all<{ name: string }>();
    for (const { name } of tables.results) {
      const rows = await db.prepare(`SELECT * FROM "${name}"`).all();
      parts.push(`${database}.${name}:${JSON.stringify(rows.results)}`);
    }
  }
  const objects = await env.DOCUMENTS.list();
  parts.push(`r2:${JSON.stringify(objects.objects.map((o) => `${o.key}@${o.etag}`))}`);
  return parts.join("\n");
}

async function setupWorld(): Promise<World> {
  const id = `${Date.now().toString(36)}`;
  const tenant = `api:mx-${id}`;
  const conversation = `${tenant}:main`;
  const agentId = `mx-${id}`;
  const tokens = {
    otherTenant: await tokenFor(`api:other-${id}:*`, `agent:other-${id}`),
    agentOnly: await tokenFor(`agent:${agentId}`),
    conversationOnly: await tokenFor(`${tenant}:*`),
    narrower: await tokenFor(conversation, `agent:${agentId}`),
    wildcard: await tokenFor("*"),
  };
  const admin = tokens.wildcard;
  expect((await call("PUT", `/v1/agents/${agentId}`, { token: admin, body: registration({ conversation, agentId }) })).status).toBe(201);
  expect((await call("POST", eventsPath(conversation), { token: admin, body: sourceEvent("seed", "seed", "hello") })).status).toBe(201);
  const doc = await json<{ hash: string }>(await call("PUT", `/v1/agents/${agentId}/documents/identity`, { token: admin, body: { content: "identity" } }));
  for (const page of ["kept", "doomed"]) {
    expect((await call("PUT", `/v1/agents/${agentId}/memory/notes/${page}`, { token: admin, body: { content: page } })).status).toBe(201);
  }
  await seedFact(conversation, agentId);
  return { conversation, agentId, documentHash: doc.hash, tokens, probe: FACT.probe };
}

/** An extracted page of `conversation`, as the extraction job writes it (the page format of core/fact-merge). */
async function seedFact(conversation: string, agentId: string): Promise<void> {
  const content = [
    `Extracted memory ${FACT.path}: facts taken from conversation history, newest value first.`,
    `- vault-code: The vault code is ${FACT.marker}. (msg seed, ref 000000000000)`,
  ].join("\n");
  // The fact cites the conversation's first message ("seed"), by its hash in the log.
  const shard = await placedShardOf(conversation);
  const eventHash = (await readEventHashes(shard, conversation, [1])).get(1) ?? "";
  const provenance = [{ factKey: "vault-code", messageId: "seed", seq: 1, eventHash, runId: "ext_seed" }];
  expect(await writeMergedVersion(shard, { conversationId: conversation, agentId, path: FACT.path, head: undefined, content, provenance }, new Date())).toBe("written");
}

/** Every documented operation about `world`, as each of `readers`: none answers with the fact's marker. Returns how many calls were probed. */
async function probeWithout(document: OpenApiDocument, world: World, readers: Record<string, string>): Promise<number> {
  const operations = Object.entries(document.paths).flatMap(([, item]) => Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), operation })));
  let probed = 0;
  for (const { method, operation } of operations) {
    const build = REQUESTS[operation.operationId];
    if (build === undefined) continue;
    for (const [reader, token] of Object.entries(readers)) {
      calls += 1;
      const { path, body } = build(world);
      const res = await call(method, path, { token, ...(body === undefined ? {} : { body }) });
      expect(await res.text(), `${operation.operationId} as ${reader} (${res.status})`).not.toContain(FACT.marker);
      probed += 1;
    }
  }
  return probed;
}

describe("authorization matrix over /openapi.json", () => {
  // Every refused call reads every table twice: minutes under load, not seconds.
  it("every documented operation × every kind of caller gets its status, and a refused call writes nothing", { timeout: 240_000 }, async () => {
    const document = (await (await exports.default.fetch("http://foldline.test/openapi.json")).json()) as OpenApiDocument;
    const world = await setupWorld();
    const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ path, method: method.toUpperCase(), operation })));
    expect(operations.length).toBeGreaterThan(20);
    const missing = operations.map((o) => o.operation.operationId).filter((id) => REQUESTS[id] === undefined);
    expect(missing, "operations without a row in the matrix").toEqual([]);

    let refused = 0;
    for (const { path, method, operation } of operations) {
      const kind = kindOf(path, operation.operationId, operation.security);
      const build = REQUESTS[operation.operationId];
      if (build === undefined) continue;
      const successes = Object.keys(operation.responses).map(Number).filter((status) => status < 400);
      // Refused callers first, so an allowed write (a deleted page) cannot change what they see.
      const ordered = [...CALLERS].sort((a, b) => Number(EXPECTED[kind][a] === "allowed") - Number(EXPECTED[kind][b] === "allowed"));
      for (const caller of ordered) {
        calls += 1;
        const { path: url, body } = build(world);
        const expected = CONVERSATION_FIRST[operation.operationId]?.[caller] ?? EXPECTED[kind][caller];
        const before = expected === "allowed" ? undefined : await storageSnapshot();
        const res = await call(method, url, { ...(caller === "none" ? {} : { token: world.tokens[caller] }), ...(body === undefined ? {} : { body }) });
        const label = `${operation.operationId} as ${caller}: ${res.status}`;
        if (expected === "allowed") {
          expect(successes, label).toContain(res.status);
          await res.body?.cancel();
          continue;
        }
        expect(res.status, `${label} ${await res.clone().text()}`).toBe(expected);
        const text = await res.text();
        // A refusal names nothing of the agent's or the tenant's it protects.
        if (kind === "agent" && caller !== "none") expect(text, label).not.toContain(`${world.conversation.slice(0, world.conversation.lastIndexOf(":"))}:*`);
        expect(await storageSnapshot(), `${label} wrote something`).toBe(before);
        refused += 1;
      }
    }
    expect(refused).toBeGreaterThan(operations.length);
  });

  // Existence oracles: tenant A holds a pattern of agent ids (`agent:<prefix>*`) that another
  // tenant's agent and an id nobody declared both fall under. On every route that takes an agent
  // id (in the path, the query or the body), A must get the same bytes back for both: status, code
  // and message, so A cannot tell which ids are held, nor fingerprint another tenant's declaration.
  // Registering the id (`putAgent`) is the one exception, and necessarily so: ids are global, and
  // claiming a free one succeeds where a held one is refused.
  it("answers tenant A the same for tenant B's agent as for an id nobody declared, on every route that takes an agent", { timeout: 240_000 }, async () => {
    const document = (await (await exports.default.fetch("http://foldline.test/openapi.json")).json()) as OpenApiDocument;
    const id = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const prefix = `or${id}`;
    const tenantA = `api:ora-${id}`;
    const tenantB = `api:orb-${id}`;
    const admin = await tokenFor("*");
    const theirs = { conversation: `${tenantB}:main`, agentId: `${prefix}b` };
    expect((await call("PUT", `/v1/agents/${theirs.agentId}`, { token: admin, body: registration(theirs) })).status).toBe(201);
    expect((await call("POST", eventsPath(theirs.conversation), { token: admin, body: sourceEvent("seed", "seed", "hello") })).status).toBe(201);
    const doc = await json<{ hash: string }>(await call("PUT", `/v1/agents/${theirs.agentId}/documents/identity`, { token: admin, body: { content: "identity" } }));
    for (const page of ["kept", "doomed"]) expect((await call("PUT", `/v1/agents/${theirs.agentId}/memory/notes/${page}`, { token: admin, body: { content: page } })).status).toBe(201);
    await seedFact(theirs.conversation, theirs.agentId);
    const ownConversation = `${tenantA}:main`;
    expect((await call("POST", eventsPath(ownConversation), { token: admin, body: sourceEvent("seed", "seed", "hello") })).status).toBe(201);

    const tokenA = await tokenFor(`${tenantA}:*`, `agent:${prefix}*`);
    const tokens = { otherTenant: tokenA, agentOnly: tokenA, conversationOnly: tokenA, narrower: tokenA, wildcard: tokenA };
    const about = (agentId: string): World => ({ conversation: ownConversation, agentId, documentHash: doc.hash, tokens, probe: FACT.probe });
    const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ path, method: method.toUpperCase(), operation })));
    const takesAgent = operations.filter(({ path, operation }) => {
      if (path.startsWith("/v1/ops/")) return false;
      const named = path.includes("{agent}") || operation.parameters.some((p) => p.name === "agent");
      // A body schema is a reference into the document's components: resolved, does it have an `agent`?
      const body = JSON.stringify(operation.requestBody ?? {});
      const ref = /"\$ref":"#\/components\/schemas\/([^"]+)"/.exec(body)?.[1];
      const schema = JSON.stringify(ref === undefined ? body : document.components.schemas[ref]);
      return named || /"properties":\{[^]*"agent":/.test(schema);
    });
    expect(takesAgent.map((o) => o.operation.operationId).sort()).toEqual(
      [
        "compose",
        "deleteMemoryPage",
        "getAgent",
        "getContext",
        "getConversationMemoryPage",
        "getDocument",
        "getMemoryPage",
        "listChain",
        "listConversationMemoryPages",
        "listMemoryPages",
        "putAgent",
        "putDocument",
        "putMemoryPage",
        "searchMemory",
        "verifyChain",
        "verifyLinks",
      ].sort(),
    );
    const differ: string[] = [];
    for (const { method, operation } of takesAgent) {
      if (operation.operationId === "putAgent") continue;
      const build = REQUESTS[operation.operationId];
      if (build === undefined) continue;
      calls += 1;
      const answers: string[] = [];
      for (const agentId of [theirs.agentId, `${prefix}free`]) {
        const { path, body } = build(about(agentId));
        const res = await call(method, path, { token: tokenA, ...(body === undefined ? {} : { body }) });
        // Byte for byte: not even the id asked about is echoed back.
        answers.push(`${res.status} ${await res.text()}`);
      }
      if (answers[0] !== answers[1]) differ.push(`${operation.operationId}: B's ${answers[0]} | free ${answers[1]}`);
    }
    expect(differ).toEqual([]);
  });

  // The privacy rule over every route: the same requests, about a sibling conversation of the
  // tenant, as tokens scoped to it (alone, and with the agent) and as the tenant itself.
  it("never serves a fact said in one conversation through any route about another conversation, to any token", { timeout: 240_000 }, async () => {
    const document = (await (await exports.default.fetch("http://foldline.test/openapi.json")).json()) as OpenApiDocument;
    const world = await setupWorld();
    const tenant = world.conversation.slice(0, world.conversation.lastIndexOf(":"));
    const sibling = `${tenant}:sibling`;
    const admin = world.tokens.wildcard;
    expect((await call("POST", eventsPath(sibling), { token: admin, body: sourceEvent("sib", "sib", "hello from the sibling") })).status).toBe(201);

    // Where it was said, the fact is served: context, compose, search and the conversation's page.
    const own = { ...world };
    const ownToken = await tokenFor(world.conversation, `agent:${world.agentId}`);
    for (const id of ["getContext", "compose", "getConversationMemoryPage"]) {
      const { path, body } = REQUESTS[id]?.(own) ?? { path: "" };
      const res = await call(id === "compose" ? "POST" : "GET", path, { token: ownToken, ...(body === undefined ? {} : { body }) });
      expect(await res.text(), id).toContain(FACT.marker);
    }
    expect(await (await call("GET", REQUESTS["searchMemory"]?.(own).path ?? "", { token: admin })).text()).toContain(FACT.marker);

    const elsewhere = { ...world, conversation: sibling };
    const readers = { sibling: await tokenFor(sibling), siblingAgent: await tokenFor(sibling, `agent:${world.agentId}`), tenant: admin };
    expect(await probeWithout(document, elsewhere, readers)).toBeGreaterThan(Object.keys(document.paths).length * 2);
  });

  // The same probe once the agent shares memory across its conversations: the tenant is now served
  // the fact in the sibling, and a token that may read the sibling but not where the fact was said
  // is still given it by no route.
  it("for an agent that shares memory, gives a fact through no route to a token that may not read where it was said", { timeout: 240_000 }, async () => {
    const document = (await (await exports.default.fetch("http://foldline.test/openapi.json")).json()) as OpenApiDocument;
    const world = await setupWorld();
    const tenant = world.conversation.slice(0, world.conversation.lastIndexOf(":"));
    const sibling = `${tenant}:sibling`;
    const admin = world.tokens.wildcard;
    const sharing = pair({ agentId: world.agentId, sources: [`${tenant}:*`], trigger: 50_000, retain: 20_000, admitSensitive: true, memorySharing: "agent" });
    expect((await call("PUT", `/v1/agents/${world.agentId}`, { token: admin, body: sharing })).status).toBe(201);
    expect((await call("POST", eventsPath(sibling), { token: admin, body: sourceEvent("sib", "sib", "hello from the sibling") })).status).toBe(201);

    const elsewhere = { ...world, conversation: sibling };
    for (const id of ["getContext", "compose"]) {
      const { path, body } = REQUESTS[id]?.(elsewhere) ?? { path: "" };
      expect(await (await call(id === "compose" ? "POST" : "GET", path, { token: admin, ...(body === undefined ? {} : { body }) })).text(), id).toContain(FACT.marker);
    }
    const readers = { sibling: await tokenFor(sibling), siblingAgent: await tokenFor(sibling, `agent:${world.agentId}`) };
    expect(await probeWithout(document, elsewhere, readers)).toBeGreaterThan(Object.keys(document.paths).length);
  });
});
