/// <reference types="vite/client" />
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import readme from "../../README.md?raw";
import { ERROR_STATUS } from "../../src/core/errors";
import { appendEventRequestSchema } from "../../src/core/events";
import { app } from "../../src/http/app";
import type { JsonSchema, OpenApiDocument, OperationObject } from "../../src/http/openapi/document";
import { openApiDocument, SCHEMA_REF_PREFIX } from "../../src/http/openapi/document";

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
