/// <reference types="vite/client" />
import { exports } from "cloudflare:workers";
import { opsText } from "../../src/core/ops-text";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import readme from "../../README.md?raw";
import { ERROR_STATUS } from "../../src/core/errors";
import { appendEventRequestSchema } from "../../src/core/events";
import { app, openApiDocument } from "../../src/http/app";
import type { JsonSchema, OpenApiDocument, OperationObject } from "../../src/http/openapi/types";
import { SCHEMA_REF_PREFIX } from "../../src/http/openapi/types";
import { insertIncidentStatement } from "../../src/storage/shard/incidents";
import { settledChain, waitFor } from "../support/chain";
import { pair } from "../support/declarations";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, sourceEvent, textUpdate, tokenFor, webhook } from "./helpers";

const ORIGIN = "https://foldline.test";

function get(path: string): Promise<Response> {
  return exports.default.fetch(`${ORIGIN}${path}`);
}

async function fetchDocument(): Promise<OpenApiDocument> {
  const res = await get("/openapi.json");
  expect(res.status).toBe(200);
  return (await res.json()) as OpenApiDocument;
}

interface Listed {
  readonly method: string;
  readonly path: string;
  readonly operation: OperationObject;
}

function operationsOf(document: OpenApiDocument): Listed[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  );
}

/**
 * Hono writes parameters as `:name` (optionally with a `{regex}`); its one wildcard route is the
 * memory page path, `{path}` in the document.
 */
function openApiPath(honoPath: string): string {
  return honoPath.replace(/:(\w+)(?:\{[^}]*\})?/g, "{$1}").replace(/\/\*$/, "/{path}");
}

/**
 * The operator inspector: server-rendered pages behind a cookie session, a browser UI over the
 * same operations rather than part of the API contract, so the document leaves it out.
 */
const isInspector = (path: string): boolean => path === "/inspector" || path.startsWith("/inspector/");

/** A zod validator for a schema of the served document, its component references resolved within the document. */
function validatorFor(document: OpenApiDocument, schema: JsonSchema): z.ZodType {
  const root = JSON.stringify({ ...(typeof schema === "object" ? schema : {}), $defs: document.components.schemas });
  return z.fromJSONSchema(JSON.parse(root.replaceAll(`"${SCHEMA_REF_PREFIX}`, '"#/$defs/')) as z.core.JSONSchema.JSONSchema);
}

function requestSchema(operation: OperationObject | undefined): JsonSchema {
  const schema = operation?.requestBody?.content["application/json"]?.schema;
  if (schema === undefined) throw new Error("no JSON request body documented");
  return schema;
}

function component(document: OpenApiDocument, schema: JsonSchema): z.core.JSONSchema.JSONSchema {
  const ref = typeof schema === "object" ? schema.$ref : undefined;
  const resolved = ref === undefined ? schema : document.components.schemas[ref.slice(SCHEMA_REF_PREFIX.length)];
  if (typeof resolved !== "object") throw new Error(`unresolvable schema ${JSON.stringify(schema)}`);
  return resolved;
}

/** Every `curl -X METHOD url … -d '<json>'` in the README, with `$C` expanded to the tour's conversation URL. */
function readmeRequests(): { method: string; pathname: string; body: unknown }[] {
  const conversationUrl = /^C=(\S+)/m.exec(readme)?.[1];
  if (conversationUrl === undefined) throw new Error("the README's tour no longer defines C=");
  return [...readme.matchAll(/curl -s -X (POST|PUT) (\S+)(?:(?!curl )[\s\S])*? -d '([^']*)'/g)].map(([, method = "", url = "", body = ""]) => ({
    method,
    pathname: decodeURIComponent(new URL(url.replace("$C", conversationUrl)).pathname),
    body: JSON.parse(body),
  }));
}

function operationsMatching(document: OpenApiDocument, method: string, pathname: string): Listed[] {
  return operationsOf(document).filter((listed) => {
    const pattern = listed.path
      .split(/(\{\w+\})/)
      .map((part) => (part === "{path}" ? ".+" : /^\{\w+\}$/.test(part) ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("");
    return listed.method === method && new RegExp(`^${pattern}$`).test(pathname);
  });
}

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch] ?? ch);

function stringsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (typeof value === "object" && value !== null) return Object.values(value).flatMap(stringsIn);
  return [];
}

describe("GET /openapi.json", () => {
  it("is an OpenAPI 3.1 document served without a token, built once per isolate", async () => {
    const res = await get("/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const document = (await res.json()) as OpenApiDocument;
    expect(document.openapi).toMatch(/^3\.1\./);
    expect(openApiDocument()).toBe(openApiDocument());
    expect(document).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });

  it("documents exactly the routes the app registers, with the same methods", async () => {
    const document = await fetchDocument();
    const registered = new Set(
      app.routes.filter((route) => route.method !== "ALL" && !isInspector(route.path)).map((route) => `${route.method} ${openApiPath(route.path)}`),
    );
    const documented = operationsOf(document).map(({ method, path }) => `${method} ${path}`);
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...registered].sort());
    // The root handler advertises the reference itself.
    const index = (await (await get("/")).json()) as { endpoints: string[] };
    expect(index.endpoints).toEqual(expect.arrayContaining(["/openapi.json", "/reference"]));
  });

  it("asks for exactly the credential each route enforces", async () => {
    const document = await fetchDocument();
    const sample: Record<string, string> = { conversation: "api:openapi-test", agent: "concierge", bot: "7001", name: "notes", hash: "0".repeat(64), path: "notes/a" };
    for (const { method, path, operation } of operationsOf(document)) {
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => sample[name] ?? name);
      const res = await exports.default.fetch(
        new Request(`${ORIGIN}${url}`, { method, ...(method === "GET" || method === "DELETE" ? {} : { headers: { "content-type": "application/json" }, body: "{}" }) }),
      );
      const schemes = operation.security.flatMap((requirement) => Object.keys(requirement));
      if (path.startsWith("/v1/")) expect(schemes, path).toEqual(["bearerAuth"]);
      else if (path.startsWith("/telegram/")) expect(schemes, path).toEqual(["telegramSecretToken"]);
      else expect(schemes, path).toEqual([]);
      if (schemes.length > 0) {
        expect(res.status, `${method} ${path} without a credential`).toBe(401);
        expect(operation.responses["401"]?.description, path).toContain("unauthorized");
      } else {
        expect(res.status, `${method} ${path}`).toBe(200);
      }
      await res.body?.cancel();
    }
    expect(document.components.securitySchemes["bearerAuth"]).toMatchObject({ type: "http", scheme: "bearer" });
    expect(document.components.securitySchemes["telegramSecretToken"]).toMatchObject({ type: "apiKey", in: "header", name: "X-Telegram-Bot-Api-Secret-Token" });
  });

  it("resolves every $ref to a component", async () => {
    const document = await fetchDocument();
    const refs = new Set<string>();
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk);
      else if (typeof value === "object" && value !== null) {
        for (const [key, item] of Object.entries(value)) {
          if (key === "$ref" && typeof item === "string") refs.add(item);
          else walk(item);
        }
      }
    };
    walk(document);
    expect(refs.size).toBeGreaterThan(5);
    for (const ref of refs) {
      expect(ref.startsWith(SCHEMA_REF_PREFIX), ref).toBe(true);
      expect(document.components.schemas[ref.slice(SCHEMA_REF_PREFIX.length)], ref).toBeDefined();
    }
  });

  it("describes the append body with the event schema: the README's requests validate, its kinds are the zod kinds", async () => {
    const document = await fetchDocument();
    const append = document.paths["/v1/conversations/{conversation}/events"]?.post;
    const schema = requestSchema(append);
    const documentKinds = (component(document, schema).oneOf ?? []).map((variant) => {
      const kind = variant.properties?.["kind"];
      return typeof kind === "object" ? kind.const : undefined;
    });
    const zodKinds = appendEventRequestSchema.options.map((option) => option.shape.kind.value);
    expect([...documentKinds].sort()).toEqual([...zodKinds].sort());

    const requests = readmeRequests();
    expect(requests.filter((r) => r.method === "POST" && r.pathname.endsWith("/events")).length).toBeGreaterThanOrEqual(2);
    for (const { method, pathname, body } of requests) {
      const matches = operationsMatching(document, method, pathname);
      expect(matches.map((m) => `${m.method} ${m.path}`), `${method} ${pathname}`).toHaveLength(1);
      const parsed = validatorFor(document, requestSchema(matches[0]?.operation)).safeParse(body);
      expect(parsed.error, `${method} ${pathname}: ${JSON.stringify(body)}`).toBeUndefined();
    }

    const validate = validatorFor(document, schema);
    const readmeEvent = requests.find((r) => r.method === "POST" && r.pathname.endsWith("/events"))?.body;
    if (typeof readmeEvent !== "object" || readmeEvent === null) throw new Error("the README's tour posts no single event");
    // The single-event body also takes the optimistic-concurrency field a batch's events do not.
    for (const event of [readmeEvent, { ...readmeEvent, expectedSeq: 0 }]) {
      expect(validate.safeParse(event).success, JSON.stringify(event)).toBe(true);
      expect(appendEventRequestSchema.safeParse(event).success, JSON.stringify(event)).toBe(true);
    }
    for (const wrong of [
      { kind: "bogus", idempotencyKey: "k", body: {} },
      { kind: "source", idempotencyKey: "k" },
      { kind: "source", idempotencyKey: "k", body: { messageId: "1", author: { id: "a" }, text: "hi" }, extra: true },
      { kind: "delivery", idempotencyKey: "k", body: { status: "failed", proposalId: "p1" } },
    ]) {
      expect(validate.safeParse(wrong).success, JSON.stringify(wrong)).toBe(false);
      expect(appendEventRequestSchema.safeParse(wrong).success, JSON.stringify(wrong)).toBe(false);
    }
  });

  it("has one Problem schema whose codes are the closed error-code set, each under its own status", async () => {
    const document = await fetchDocument();
    const problem = document.components.schemas["Problem"];
    const error = typeof problem === "object" ? problem.properties?.["error"] : undefined;
    const code = typeof error === "object" ? error.properties?.["code"] : undefined;
    expect(typeof code === "object" ? code.enum : undefined).toEqual(Object.keys(ERROR_STATUS));

    const statusOf = new Map<string, number>(Object.entries(ERROR_STATUS));
    let errorResponses = 0;
    for (const { method, path, operation } of operationsOf(document)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const schema = response.content?.["application/json"]?.schema;
        const parts = typeof schema === "object" ? (schema.allOf ?? []) : [];
        if (Number(status) < 400) continue;
        errorResponses += 1;
        expect(parts[0]?.$ref, `${method} ${path} ${status}`).toBe(`${SCHEMA_REF_PREFIX}Problem`);
        const narrowed = parts[1]?.properties?.["error"];
        const codes = typeof narrowed === "object" ? narrowed.properties?.["code"] : undefined;
        const listed = typeof codes === "object" ? (codes.enum ?? []) : [];
        expect(listed.length, `${method} ${path} ${status}`).toBeGreaterThan(0);
        for (const c of listed) expect(statusOf.get(String(c)), `${method} ${path}: ${String(c)}`).toBe(Number(status));
      }
      expect(operation.responses["500"]?.description, `${method} ${path}`).toContain("internal");
    }
    expect(errorResponses).toBeGreaterThan(operationsOf(document).length);

    // A real failure validates against the documented Problem; something else does not.
    const validate = validatorFor(document, { $ref: `${SCHEMA_REF_PREFIX}Problem` });
    const res = await get("/v1/conversations/api:openapi-test/events");
    expect(res.status).toBe(401);
    expect(validate.safeParse(await res.json()).success).toBe(true);
    expect(validate.safeParse({ error: { code: "no_such_code", message: "x" } }).success).toBe(false);
    expect(validate.safeParse({ code: "internal", message: "x" }).success).toBe(false);
  });
});

/** Every JSON success response the document describes, as `operationId status`, with its schema. */
function jsonSuccesses(document: OpenApiDocument): Map<string, JsonSchema | undefined> {
  const found = new Map<string, JsonSchema | undefined>();
  for (const { operation } of operationsOf(document)) {
    for (const [status, response] of Object.entries(operation.responses)) {
      const media = response.content?.["application/json"];
      if (Number(status) < 400 && media !== undefined) found.set(`${operation.operationId} ${status}`, media.schema);
    }
  }
  return found;
}

/**
 * Checks real responses against the schema the served document gives their operation and status,
 * and remembers which (operationId, status) pairs it has seen.
 */
function responseChecker(document: OpenApiDocument) {
  const schemas = jsonSuccesses(document);
  const covered = new Set<string>();
  return {
    covered,
    async check<T = Record<string, unknown>>(operationId: string, res: Response): Promise<T> {
      const key = `${operationId} ${res.status}`;
      const schema = schemas.get(key);
      if (schema === undefined) throw new Error(`${key}: not a documented JSON success (${await res.text()})`);
      const body: unknown = await res.json();
      const parsed = validatorFor(document, schema).safeParse(body);
      expect(parsed.error, `${key}: ${JSON.stringify(body)}`).toBeUndefined();
      covered.add(key);
      return body as T;
    },
  };
}

let responseCounter = 0;

describe("success responses", () => {
  it("are described by a named schema when JSON, and by none otherwise", async () => {
    const document = await fetchDocument();
    const successes = jsonSuccesses(document);
    expect(successes.size).toBeGreaterThanOrEqual(operationsOf(document).length);
    for (const [key, schema] of successes) {
      expect(typeof schema === "object" ? schema.$ref : undefined, key).toMatch(new RegExp(`^${SCHEMA_REF_PREFIX}\\w+$`));
      // Resolves, to a schema that constrains something.
      expect(Object.keys(component(document, schema ?? {})).length, key).toBeGreaterThan(0);
    }
    for (const { method, path, operation } of operationsOf(document)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        for (const [media, { schema }] of Object.entries(response.content ?? {})) {
          if (media !== "application/json") expect(schema, `${method} ${path} ${status} ${media}`).toBeUndefined();
        }
        if (status === "204") expect(response.content, `${method} ${path}`).toBeUndefined();
      }
    }
    // Strict as served: an undocumented field, or a null where the service promises a value, fails.
    const health = validatorFor(document, { $ref: `${SCHEMA_REF_PREFIX}Health` });
    expect(health.safeParse({ ok: true }).success).toBe(true);
    expect(health.safeParse({ ok: true, uptime: 1 }).success).toBe(false);
    const page = validatorFor(document, { $ref: `${SCHEMA_REF_PREFIX}MemoryPageSummary` });
    expect(page.safeParse({ path: "a/b", version: 1, contentHash: "0".repeat(64), chars: 1 }).success).toBe(true);
    expect(page.safeParse({ path: "a/b", version: 1, contentHash: null, chars: 1 }).success).toBe(false);
  });

  it("validate against the served document: a real response of every operation and status", async () => {
    const document = await fetchDocument();
    const { check, covered } = responseChecker(document);
    const conversation = freshConversation("api:openapi");
    const agentId = `openapi-${Date.now().toString(36)}-${responseCounter++}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const conversationPath = `/v1/conversations/${encodeURIComponent(conversation)}`;

    await check("serviceIndex", await get("/"));
    await check("health", await get("/healthz"));
    await check("openApiDocument", await get("/openapi.json"));

    // A trusted document, subscribed to by the pair, so a composition lists it.
    const uploaded = await check<{ name: string; hash: string }>(
      "putDocument",
      await call("PUT", `/v1/agents/${agentId}/documents/identity`, { token, body: { content: "You are the concierge of the offsite." } }),
    );
    const base = pair({ agentId, sources: [conversation], trigger: 2_000, retain: 800, admitSensitive: true });
    const documents = [{ name: uploaded.name, hash: uploaded.hash }];
    const registration = { agent: { ...base.agent, documents }, compactor: { ...base.compactor, documents } };
    await check("putAgent", await call("PUT", `/v1/agents/${agentId}`, { token, body: registration }));
    await check("putAgent", await call("PUT", `/v1/agents/${agentId}`, { token, body: registration }));
    await check("getAgent", await call("GET", `/v1/agents/${agentId}`, { token }));
    // Read back once the agent is declared (an undeclared id's documents answer not_found).
    await check("getDocument", await call("GET", `/v1/agents/${agentId}/documents/identity/${uploaded.hash}`, { token }));

    // Enough history for a compaction, every event kind a client may append, and replays.
    const line = (i: number) =>
      `Message ${i}: planning the offsite, ${i % 2 === 0 ? "Lisbon" : "Porto"} looks good and the budget is ${1000 + i * 10} euros per person, flights included.`;
    for (let i = 0; i < 20; i++) await check("appendEvent", await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, line(i)) }));
    await check("appendEvent", await call("POST", eventsPath(conversation), { token, body: sourceEvent("m0", "0", line(0)) }));
    const batch = {
      events: [
        { kind: "proposal", idempotencyKey: "p1", body: { proposalId: "p1", agentId, replyToMessageId: "19", text: "Lisbon it is." } },
        { kind: "delivery", idempotencyKey: "d1", body: { status: "delivered", proposalId: "p1", externalMessageId: "x1" } },
        { kind: "run", idempotencyKey: "r1", body: { runId: "r1", agentId, role: "agent", status: "completed", detail: { replies: 1 } } },
        { kind: "source", idempotencyKey: "s-sensitive", sensitive: true, body: { messageId: "20", author: { id: "u2", username: "bo" }, text: "A private note." } },
      ],
    };
    await check("appendBatch", await call("POST", eventsPath(conversation, "/batch"), { token, body: batch }));
    await check("appendBatch", await call("POST", eventsPath(conversation, "/batch"), { token, body: batch }));
    await settledChain(conversation, agentId, 1);
    // An edit of a covered message: the context carries an amendment beside the boundary.
    const edit = { kind: "correction", idempotencyKey: "edit-0", body: { action: "edit", targetMessageId: "0", text: "Message 0 (corrected): Berlin instead." } };
    await check("appendEvent", await call("POST", eventsPath(conversation), { token, body: edit }));

    const context = await check<{ manifest: { boundary: unknown; amendment: unknown } }>(
      "getContext",
      await call("GET", `${conversationPath}/context?agent=${agentId}`, { token }),
    );
    expect(context.manifest.boundary).not.toBeNull();
    expect(context.manifest.amendment).not.toBeNull();
    const prompt = { text: "What did we decide?", images: [{ url: "https://example.invalid/menu.png", detail: "low" }] };
    await check("compose", await call("POST", `${conversationPath}/compose`, { token, body: { agent: agentId, prompt } }));

    const events = await check<{ events: { kind: string }[] }>("listEvents", await call("GET", `${eventsPath(conversation)}?limit=500`, { token }));
    expect(new Set(events.events.map((e) => e.kind))).toEqual(new Set(["source", "proposal", "delivery", "run", "correction"]));
    await check("listEvents", await call("GET", `${eventsPath(conversation)}?limit=2`, { token }));
    await check("listTurns", await call("GET", `${conversationPath}/turns?sensitive=include`, { token }));
    await check("listTurns", await call("GET", `${conversationPath}/turns?limit=1&agents=${agentId}`, { token }));

    const chain = await check<{ boundaries: unknown[] }>("listChain", await call("GET", `${conversationPath}/chain?agent=${agentId}`, { token }));
    expect(chain.boundaries.length).toBeGreaterThan(0);
    const audit = await check<{ valid: boolean }>("verifyChain", await call("GET", `${conversationPath}/verify?agent=${agentId}`, { token }));
    expect(audit.valid).toBe(true);
    const linkPage = await check<{ links: unknown[]; nextAfter: number | null }>("verifyLinks", await call("GET", `${conversationPath}/verify/links?agent=${agentId}&limit=1`, { token }));
    expect(linkPage.links).toHaveLength(1);

    // An incident row as the engine writes it; the read is what is checked.
    await insertIncidentStatement(await shardOf(conversation), {
      conversationId: conversation,
      agentId,
      runId: null,
      kind: "compactor_failure",
      code: "model_error",
      message: opsText`attempt 1: model_error`,
      detail: "the provider said: overloaded",
      createdAt: new Date().toISOString(),
    }).run();
    const incidents = await check<{ incidents: unknown[] }>("listIncidents", await call("GET", `${conversationPath}/incidents`, { token }));
    expect(incidents.incidents.length).toBeGreaterThan(0);
    await check("listIncidents", await call("GET", `${conversationPath}/incidents?limit=1`, { token }));
    const ops = await tokenFor("ops");
    await check("opsHealth", await call("GET", "/v1/ops/health", { token: ops }));
    const fleet = await check<{ incidents: unknown[] }>("listFleetIncidents", await call("GET", `/v1/ops/incidents?agent=${agentId}`, { token: ops }));
    expect(fleet.incidents.length).toBeGreaterThan(0);

    const memoryPage = `/v1/agents/${agentId}/memory/decisions/venue`;
    await check("putMemoryPage", await call("PUT", memoryPage, { token, body: { content: "Lisbon, in May." } }));
    await check("putMemoryPage", await call("PUT", memoryPage, { token, body: { content: "Lisbon, in May." } }));
    await check("listMemoryPages", await call("GET", `/v1/agents/${agentId}/memory`, { token }));
    await check("listMemoryPages", await call("GET", `/v1/agents/${agentId}/memory?limit=1`, { token }));
    await check("getMemoryPage", await call("GET", `${memoryPage}?version=1`, { token }));
    await check("searchMemory", await call("GET", `${conversationPath}/memory/search?agent=${agentId}&q=Lisbon`, { token }));
    // The settled boundary's extraction keeps its pages with the conversation (the person who spoke has one).
    const extracted = await waitFor(async () => {
      const listing = await call("GET", `${conversationPath}/memory/pages?agent=${agentId}`, { token });
      const pages = ((await listing.clone().json()) as { pages?: { path: string }[] }).pages ?? [];
      return pages.length > 0 ? listing : undefined;
    }, "an extracted page");
    const pages = await check<{ pages: { path: string }[] }>("listConversationMemoryPages", extracted);
    await check("getConversationMemoryPage", await call("GET", `${conversationPath}/memory/pages/${pages.pages[0]?.path ?? ""}?agent=${agentId}&provenance=1`, { token }));
    // With a query, the context carries the memory envelope and the manifest lists it.
    // (Extraction after the settled boundary may have written pages of its own that mention Lisbon too.)
    const recalled = await check<{ manifest: { memory?: { pages: { path: string }[] } } }>("getContext", await call("GET", `${conversationPath}/context?agent=${agentId}&query=Lisbon`, { token }));
    expect(recalled.manifest.memory?.pages.map((p) => p.path)).toContain("decisions/venue");

    // Telegram: stored, redelivered, and an update kind that is not used.
    const updateId = 500_000_000 + Math.floor(Math.random() * 100_000_000);
    const update = textUpdate(updateId, 900_000_000 + Math.floor(Math.random() * 100_000_000), "hello from telegram");
    const stored = await check<{ duplicate?: boolean }>("telegramWebhook", await webhook(update));
    const redelivered = await check<{ duplicate?: boolean }>("telegramWebhook", await webhook(update));
    expect([stored.duplicate, redelivered.duplicate]).toEqual([false, true]);
    const ignored = await check<{ ignored?: string }>("telegramWebhook", await webhook({ update_id: updateId + 1 }));
    expect(ignored.ignored).toBeDefined();

    // A new operation, or a new status of one, fails here until a call above covers it.
    expect([...covered].sort()).toEqual([...jsonSuccesses(document).keys()].sort());
  });
});

describe("GET /reference", () => {
  it("renders every operation as escaped HTML under a CSP that allows only its own stylesheet", async () => {
    const document = await fetchDocument();
    const res = await get("/reference");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const html = await res.text();

    for (const { method, path, operation } of operationsOf(document)) {
      expect(html, path).toContain(`<code>${path}</code>`);
      expect(html, operation.operationId).toContain(`id="op-${operation.operationId}"`);
      expect(html, `${method} ${path}`).toContain(escapeHtml(operation.summary));
    }
    for (const name of Object.keys(document.components.schemas)) expect(html).toContain(`id="schema-${name}"`);

    expect(html).not.toMatch(/<script/i);
    const angled = stringsIn(document).filter((s) => s.includes("<"));
    expect(angled.length).toBeGreaterThan(0);
    for (const s of angled) expect(html).not.toContain(s);
    expect(html).toContain("telegram:&lt;botId&gt;:&lt;chatId&gt;");

    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map(([, css = ""]) => css);
    expect(styles).toHaveLength(1);
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(styles[0])));
    expect(csp).toContain(`style-src 'sha256-${btoa(String.fromCharCode(...digest))}'`);
  });
});
