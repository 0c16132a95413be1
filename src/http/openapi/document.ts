import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../types";
import type { Tag } from "./operation";
import { schemaComponents } from "./schemas";
import type { HttpMethod, OpenApiDocument, OperationObject, TagObject } from "./types";
import { openApiSchema } from "./types";

/**
 * The OpenAPI 3.1 description of the HTTP API, generated from the app (`getOpenAPI31Document`):
 * every operation is declared where its route is (`operation()` + `app.openapi()`), with its prose,
 * parameters, request body and responses, so a route cannot exist undescribed or be described
 * apart from what it does. What is added here is what belongs to the document as a whole: its
 * info, the tags' prose, the security schemes and the schema components (`openapi/schemas.ts`).
 */

const TAGS = [
  { name: "events", description: "The immutable event log: appends, pages of the log, and the effective turns reconstructed from it." },
  { name: "context", description: "What an agent is served: its verified context and one composed provider request." },
  { name: "chain", description: "The operator's audit of an agent's boundary chain, and the conversation's incident rows." },
  { name: "agents", description: "Declarations (an agent with its reciprocal compactor) and trusted identity/memory documents." },
  {
    name: "memory",
    description:
      "Versioned memory pages: those people write for an agent (served in every conversation it serves), and the facts extraction keeps " +
      "with each conversation (served in that conversation only). Recalled for context, compose and the compactor.",
  },
  { name: "ops", description: "The operator's view of the whole deployment: its health and every shard's incidents (scope `ops`)." },
  { name: "telegram", description: "Telegram ingress." },
  { name: "service", description: "Liveness and this reference." },
] as const satisfies readonly (TagObject & { name: Tag })[];

const INFO = {
  title: "Foldline",
  version: "v1",
  description:
    "Conversation compaction with provenance for persistent chat agents: an immutable event log, and for each agent a " +
    "bounded context of one verified summary plus the exact recent tail. Every error is `{ error: { code, message, …details } }` " +
    "(the `Problem` schema) with one of a closed set of codes; a request that fails changes nothing.",
};

/**
 * Hono's wildcard routes, the memory page paths (`/:agent/memory/*`, `/:conversation/memory/pages/*`), keep their `*` so that the
 * handler splits the raw path before decoding it; in the document it is the parameter `{path}`.
 */
const openApiPath = (path: string): string => path.replace(/\/\*$/, "/{path}");

/** Every `{name}` of a path is one of its operation's path parameters, and every path parameter is in the path. */
function checkPathParameters(path: string, method: string, operation: OperationObject): void {
  const inPath = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => name).sort();
  const declared = operation.parameters.filter((p) => p.in === "path").map((p) => p.name).sort();
  if (JSON.stringify(inPath) !== JSON.stringify(declared)) {
    throw new Error(`${method.toUpperCase()} ${path}: path parameters ${JSON.stringify(declared)} do not match the path`);
  }
}

/**
 * Builds the document from what `app` registered. Call it once the app is complete (`app.ts`
 * builds it on first use): it adds the components to the app's registry.
 */
export function buildDocument(app: OpenAPIHono<AppEnv>): OpenApiDocument {
  const registry = app.openAPIRegistry;
  for (const [name, schema] of Object.entries(schemaComponents())) registry.registerComponent("schemas", name, openApiSchema(schema));
  registry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "An API token (`npm run token`), scoped to conversation patterns and `agent:<id>`.",
  });
  registry.registerComponent("securitySchemes", "telegramSecretToken", {
    type: "apiKey",
    in: "header",
    name: "X-Telegram-Bot-Api-Secret-Token",
    description: "The webhook's `secret_token`, equal to the Worker secret `TELEGRAM_WEBHOOK_SECRET_<botId>`.",
  });
  const generated = app.getOpenAPI31Document({ openapi: "3.1.0", info: INFO, tags: [...TAGS] });
  // Every operation went through `operation()`, whose type requires each field `OperationObject`
  // promises, and every schema is one zod converted (`schemaComponents`): the generated document
  // has the served shape, which the conformance test checks against real responses.
  const paths = Object.fromEntries(Object.entries(generated.paths ?? {}).map(([path, item]) => [openApiPath(path), item])) as unknown as OpenApiDocument["paths"];
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item) as [HttpMethod, OperationObject][]) checkPathParameters(path, method, operation);
  }
  const { schemas, securitySchemes } = generated.components as unknown as OpenApiDocument["components"];
  return { openapi: "3.1.0", info: INFO, tags: TAGS, paths, components: { schemas, securitySchemes } };
}
