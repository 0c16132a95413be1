import { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { maxBodyBytes } from "../config";
import { agents } from "./agents";
import { requireToken } from "./auth";
import { chainRoutes } from "./chain";
import { conversations } from "./conversations";
import { conversationMemory } from "./conversation-memory";
import { problem, thrownProblem } from "./errors";
import { incidentRoutes } from "./incidents";
import { inspector } from "./inspector";
import { serveMcp } from "../mcp/server";
import { memory } from "./memory";
import { ops } from "./ops";
import type { Wire } from "../api/responses";
import { healthSchema, serviceIndexSchema } from "../api/responses";
import { buildDocument } from "./openapi/document";
import { operation, PUBLIC } from "./openapi/operation";
import { problems } from "./openapi/problem";
import { openApiRoutes } from "./openapi/routes";
import { jsonResponse } from "./openapi/schemas";
import type { OpenApiDocument } from "./openapi/types";
import { telegram } from "./telegram";
import type { AppEnv } from "./types";

export const app = new OpenAPIHono<AppEnv>();

app.use("*", async (c, next) =>
  bodyLimit({
    maxSize: maxBodyBytes(c.env),
    onError: (ctx) => problem(ctx, { code: "payload_too_large", message: `bodies are limited to ${maxBodyBytes(c.env)} bytes` }),
  })(c, next),
);

const serviceIndex = operation({
  method: "get",
  path: "/",
  operationId: "serviceIndex",
  tags: ["service"],
  summary: "What this service is",
  description: "The service's name and its main endpoints.",
  security: PUBLIC,
  parameters: [],
  responses: { 200: jsonResponse("the service's name and main endpoints", "ServiceIndex", serviceIndexSchema), ...problems() },
});

const health = operation({
  method: "get",
  path: "/healthz",
  operationId: "health",
  tags: ["service"],
  summary: "Liveness",
  description: "Answers as long as the Worker runs; touches no binding.",
  security: PUBLIC,
  parameters: [],
  responses: { 200: jsonResponse("alive", "Health", healthSchema), ...problems() },
});

app.openapi(serviceIndex, (c) =>
  c.json({
    service: "foldline",
    about: "conversation compaction with provenance for persistent chat agents",
    endpoints: ["/healthz", "/v1/conversations/{conversation}/events", "/v1/conversations/{conversation}/turns", "/telegram/{bot}/webhook", "/mcp", "/openapi.json", "/reference", "/inspector"],
  } satisfies Wire<typeof serviceIndexSchema>),
);
app.openapi(health, (c) => c.json({ ok: true } satisfies Wire<typeof healthSchema>));
app.route("/", openApiRoutes(openApiDocument));

app.use("/v1/*", requireToken);
app.route("/v1/conversations", conversations);
app.route("/v1/conversations", chainRoutes);
app.route("/v1/conversations", incidentRoutes);
app.route("/v1/conversations", conversationMemory);
app.route("/v1/agents", memory);
app.route("/telegram", telegram);
app.route("/v1/agents", agents);
app.route("/v1/ops", ops);
app.route("/inspector", inspector);

// MCP over Streamable HTTP (src/mcp): the same bearer tokens as /v1, checked before any MCP message is read.
app.use("/mcp", requireToken);
app.all("/mcp", (c) => serveMcp(c.req.raw, c.env, c.get("principal")));

app.notFound((c) => problem(c, { code: "not_found", message: `no route for ${c.req.method} ${new URL(c.req.url).pathname}` }));
app.onError((error, c) => thrownProblem(c, error));

let built: OpenApiDocument | undefined;

/**
 * The document of every route registered above (the inspector, a plain Hono app, is not in it),
 * built on first use and kept for the isolate's life: it depends on code only, never on a request.
 */
export function openApiDocument(): OpenApiDocument {
  built ??= buildDocument(app);
  return built;
}
