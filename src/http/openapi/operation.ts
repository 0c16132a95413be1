import { createRoute } from "@hono/zod-openapi";
import type { RouteConfig } from "@hono/zod-openapi";
import type { ParameterObject as OpenApiParameter } from "openapi3-ts/oas31";
import type { z } from "zod";
import { conversationIdSchema, TELEGRAM_BOT_ID } from "../../core/conversation-id";
import { documentNameSchema, sha256Schema } from "../../core/declarations";
import { agentIdSchema } from "../../core/events";
import { memoryPathSchema } from "../../core/memory-path";
import { requestJsonSchema } from "./schemas";
import type { RequestBodyConfig } from "./types";
import { routeParameter } from "./types";

/** The document's tags; `document.ts` describes each. */
export type Tag = "events" | "context" | "chain" | "agents" | "memory" | "ops" | "telegram" | "service";

type Security = { bearerAuth: [] }[] | { telegramSecretToken: [] }[] | [];

/** A `/v1` route: the bearer middleware `app.ts` mounts on `/v1/*`. */
export const BEARER: Security = [{ bearerAuth: [] }];
/** The webhook: its own secret header check. */
export const TELEGRAM_SECRET: Security = [{ telegramSecretToken: [] }];
/** No credential (the document sets no global requirement). */
export const PUBLIC: Security = [];

/**
 * One operation: route and documentation in one declaration, for `OpenAPIHono.openapi()`. The
 * fields a reader of the reference needs are required here, so no operation can be registered
 * without them.
 *
 * The request is declared for the document only (`jsonBody`, `pathParameter`, `queryParameters`):
 * no zod schema sits in `request`, so `openapi()` installs no validator, and the handler checks
 * scope and then validates through `api/`, exactly as the RPC entrypoint does. zod-openapi 1.6's
 * own validators would change what a caller sees: they run before the handler, so the scope
 * check would have to move into route middleware; its media-type gate throws an `HTTPException`
 * (415 as text, which `app.onError` would turn into `internal`) and its JSON reader another (400
 * "Malformed JSON"); a request with no media type and no body passes the gate and is validated
 * as `{}`, a shape failure instead of `unsupported_media_type`; and its query validator passes a
 * repeated key as an array where `c.req.query()` takes the first value. Mapping all of that back
 * in a `defaultHook` would be a second formatter of the same refusals, next to the one `api/`
 * must keep for RPC; declaring instead keeps one. `openapi-request-order.test.ts` checks the order
 * and the bodies on every operation with a body.
 */
export function operation<const R extends RouteConfig & Operation>(config: R) {
  return createRoute(config);
}

interface Operation {
  readonly operationId: string;
  readonly tags: [Tag];
  readonly summary: string;
  readonly description: string;
  readonly security: Security;
  readonly parameters: OpenApiParameter[];
  readonly request?: { readonly body: RequestBodyConfig };
}

const PATH_PARAMETERS = {
  conversation: {
    schema: () => requestJsonSchema(conversationIdSchema),
    description:
      "`telegram:<botId>:<chatId>`, `telegram:<botId>:<chatId>:<threadId>` for a forum topic, or `api:<key>` " +
      "(letters, digits, `._:-`); it must be inside the token's scopes",
  },
  agent: {
    schema: () => requestJsonSchema(agentIdSchema),
    description: "the agent's id; the token needs the scope `agent:<id>` (or a pattern matching it) and conversation scopes that contain every source the agent serves",
  },
  bot: { schema: () => ({ type: "string", pattern: TELEGRAM_BOT_ID.source }), description: "the bot's numeric id; its secret is the Worker secret `TELEGRAM_WEBHOOK_SECRET_<botId>`" },
  name: { schema: () => requestJsonSchema(documentNameSchema), description: "the document's name" },
  hash: { schema: () => requestJsonSchema(sha256Schema), description: "the SHA-256 of the document's content" },
  path: {
    schema: () => requestJsonSchema(memoryPathSchema),
    description:
      "the page path, such as `decisions/venue`: `/`-separated segments of letters, digits and `._-`, never `.` or `..`; " +
      "each segment is percent-decoded on its own, so an encoded `/` is refused",
  },
} as const satisfies Readonly<Record<string, { readonly schema: () => z.core.JSONSchema.JSONSchema; readonly description: string }>>;

/** A path parameter, described once for every route that has it. */
export function pathParameter(name: keyof typeof PATH_PARAMETERS) {
  const parameter = PATH_PARAMETERS[name];
  return routeParameter({ name, in: "path", required: true, description: parameter.description, schema: parameter.schema() });
}

/** The query parameters `schema` takes as a request, each with its note. */
export function queryParameters(schema: z.ZodType, notes: Readonly<Record<string, string>>) {
  const converted = requestJsonSchema(schema);
  const required = new Set(converted.required);
  return Object.entries(converted.properties ?? {}).map(([name, property]) => {
    const description = notes[name];
    return routeParameter({ name, in: "query", required: required.has(name), ...(description === undefined ? {} : { description }), schema: property });
  });
}
