import { createHash } from "node:crypto";
import { OpenAPIHono } from "@hono/zod-openapi";
import { secureHeaders } from "hono/secure-headers";
import { openApiDocumentSchema } from "../../api/responses";
import type { AppEnv } from "../types";
import { operation, PUBLIC } from "./operation";
import { problems } from "./problem";
import { REFERENCE_CSS, ReferencePage } from "./reference-page";
import { jsonResponse } from "./schemas";
import type { OpenApiDocument } from "./types";

/** CSP source of the page's one inline stylesheet, so the policy can refuse every other style and all scripts. */
const styleSource = `'sha256-${createHash("sha256").update(REFERENCE_CSS, "utf8").digest("base64")}'`;

const documentRoute = operation({
  method: "get",
  path: "/openapi.json",
  operationId: "openApiDocument",
  tags: ["service"],
  summary: "This API description",
  description: "The OpenAPI 3.1 document, generated from the zod schemas the routes validate with.",
  security: PUBLIC,
  parameters: [],
  responses: { 200: jsonResponse("the OpenAPI document", "OpenApiDocument", openApiDocumentSchema), ...problems() },
});

const referenceRoute = operation({
  method: "get",
  path: "/reference",
  operationId: "reference",
  tags: ["service"],
  summary: "This API description as a page",
  description: "The same document rendered as HTML.",
  security: PUBLIC,
  parameters: [],
  middleware: secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      styleSrc: [styleSource],
      baseUri: ["'none'"],
      formAction: ["'none'"],
      frameAncestors: ["'none'"],
    },
  }),
  responses: { 200: { description: "the reference page", content: { "text/html": {} } }, ...problems() },
});

/**
 * The API's description, outside `/v1` and without a token: it describes the routes and holds no
 * data. `/openapi.json` is the document, `/reference` the same document as a page; `document` is
 * the app's (`app.ts`), built once.
 */
export function openApiRoutes(document: () => OpenApiDocument) {
  return new OpenAPIHono<AppEnv>()
    .openapi(documentRoute, (c) => c.json(document()))
    .openapi(referenceRoute, (c) => c.html(<ReferencePage document={document()} />));
}
