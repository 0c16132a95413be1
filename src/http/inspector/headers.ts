import type { MiddlewareHandler } from "hono";
import { securityHeaders } from "./security";
import type { InspectorEnv } from "./types";

/**
 * Applies the inspector's security headers to every response it produces: pages, redirects, raw
 * JSON and error pages alike (the headers are set after the handler, over whatever it returned).
 */
export const inspectorHeaders: MiddlewareHandler<InspectorEnv> = async (c, next) => {
  await next();
  for (const [name, value] of Object.entries(securityHeaders(c.get("scriptNonce")))) c.res.headers.set(name, value);
};
