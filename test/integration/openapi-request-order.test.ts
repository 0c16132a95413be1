import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { OpenApiDocument, OperationObject } from "../../src/http/openapi/types";
import { SCHEMA_REF_PREFIX } from "../../src/http/openapi/types";
import { pair } from "../support/declarations";
import { BOT_ID, call, tokenFor, WEBHOOK_SECRET } from "./helpers";

/**
 * The order of a request's checks on every documented operation with a body, as the document
 * lists them: credential, then the path's conversation or agent against the token's scopes, then
 * media type and JSON, then shape, each refusal the `Problem` body of a status the operation
 * documents for its code. The routes declare their bodies for the document only, so no validator
 * of the OpenAPI layer may answer first (it would refuse a body-less request as a shape, answer
 * a wrong media type with its own text, or judge the body before the scope).
 */

interface Sent {
  readonly contentType?: string;
  readonly body?: string;
}

interface Case {
  readonly name: string;
  readonly inScope: boolean;
  readonly sent: Sent;
  readonly code: string;
}

const CASES: readonly Case[] = [
  { name: "out of scope, with a body that is not JSON", inScope: false, sent: { contentType: "text/plain", body: "not json" }, code: "forbidden" },
  { name: "out of scope, with a body of the wrong shape", inScope: false, sent: { contentType: "application/json", body: '{"unexpected":true}' }, code: "forbidden" },
  { name: "no body and no media type", inScope: true, sent: {}, code: "unsupported_media_type" },
  { name: "a media type that is not JSON", inScope: true, sent: { contentType: "text/plain", body: "{}" }, code: "unsupported_media_type" },
  { name: "JSON that does not parse", inScope: true, sent: { contentType: "application/json", body: "{not json" }, code: "invalid_json" },
  { name: "JSON of the wrong shape", inScope: true, sent: { contentType: "application/json", body: '{"unexpected":true}' }, code: "validation_failed" },
];

function problemValidator(document: OpenApiDocument): z.ZodType {
  const root = JSON.stringify({ $ref: `${SCHEMA_REF_PREFIX}Problem`, $defs: document.components.schemas });
  return z.fromJSONSchema(JSON.parse(root.replaceAll(`"${SCHEMA_REF_PREFIX}`, '"#/$defs/')) as z.core.JSONSchema.JSONSchema);
}

/** The codes the document lists for one status of an operation. */
function documentedCodes(operation: OperationObject, status: number): unknown[] {
  const schema = operation.responses[String(status)]?.content?.["application/json"]?.schema;
  const narrowed = typeof schema === "object" ? schema.allOf?.[1]?.properties?.["error"] : undefined;
  const code = typeof narrowed === "object" ? narrowed.properties?.["code"] : undefined;
  return typeof code === "object" ? (code.enum ?? []) : [];
}

describe("requests with a body, on every documented operation", () => {
  it("are judged by credential, scope, media type, JSON and shape, in that order, with documented Problem bodies", async () => {
    const document = (await (await exports.default.fetch("http://foldline.test/openapi.json")).json()) as OpenApiDocument;
    const isProblem = problemValidator(document);
    const id = Date.now().toString(36);
    const tenant = `api:ro-${id}`;
    const agentId = `ro-${id}`;
    const inScope = await tokenFor("*");
    const outOfScope = await tokenFor(`api:other-${id}:*`, `agent:other-${id}`);
    const registration = pair({ agentId, sources: [`${tenant}:*`], trigger: 50_000, retain: 20_000, admitSensitive: true });
    expect((await call("PUT", `/v1/agents/${agentId}`, { token: inScope, body: registration })).status).toBe(201);
    const sample: Record<string, string> = { conversation: encodeURIComponent(`${tenant}:main`), agent: agentId, bot: BOT_ID, name: "notes", path: "notes/a" };

    const withBody = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, operation]) => (operation.requestBody === undefined ? [] : [{ path, method: method.toUpperCase(), operation }])),
    );
    expect(withBody.map((o) => o.operation.operationId).sort()).toEqual(
      ["appendBatch", "appendEvent", "compose", "putAgent", "putDocument", "putMemoryPage", "telegramWebhook"].sort(),
    );

    for (const { path, method, operation } of withBody) {
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => sample[name] ?? name);
      const webhook = path.startsWith("/telegram/");
      for (const { name, inScope: scoped, sent, code } of CASES) {
        const headers = new Headers(sent.contentType === undefined ? {} : { "content-type": sent.contentType });
        if (webhook) {
          if (scoped) headers.set("x-telegram-bot-api-secret-token", WEBHOOK_SECRET);
        } else {
          headers.set("authorization", `Bearer ${scoped ? inScope : outOfScope}`);
        }
        const res = await exports.default.fetch(new Request(`http://foldline.test${url}`, { method, headers, ...(sent.body === undefined ? {} : { body: sent.body }) }));
        // The webhook has no scope: its refusal before the body is the secret's.
        const expected = webhook && !scoped ? "unauthorized" : code;
        const label = `${operation.operationId}, ${name}: ${res.status}`;
        const body: unknown = await res.json();
        expect(isProblem.safeParse(body).success, `${label} ${JSON.stringify(body)}`).toBe(true);
        const problem = body as { error: { code: string; issues?: unknown } };
        expect(problem.error.code, label).toBe(expected);
        expect(documentedCodes(operation, res.status), label).toContain(expected);
        if (expected === "validation_failed") expect(problem.error.issues, label).toEqual(expect.arrayContaining([expect.objectContaining({ path: expect.any(String), message: expect.any(String) })]));
      }
    }
  });
});
