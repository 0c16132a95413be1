import { createHash } from "node:crypto";
import { Hono } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "../types";
import { openApiDocument } from "./document";
import { REFERENCE_CSS, ReferencePage } from "./reference-page";

/** CSP source of the page's one inline stylesheet, so the policy can refuse every other style and all scripts. */
const styleSource = `'sha256-${createHash("sha256").update(REFERENCE_CSS, "utf8").digest("base64")}'`;

/**
 * The API's description, outside `/v1` and without a token: it describes the routes and holds no
 * data. `/openapi.json` is the document, `/reference` the same document as a page.
 */
export const openApiRoutes = new Hono<AppEnv>()
  .get("/openapi.json", (c) => c.json(openApiDocument()))
  .get(
    "/reference",
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'none'"],
        styleSrc: [styleSource],
        baseUri: ["'none'"],
        formAction: ["'none'"],
        frameAncestors: ["'none'"],
      },
    }),
    (c) => c.html(<ReferencePage document={openApiDocument()} />),
  );
