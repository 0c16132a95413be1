import type { Context, MiddlewareHandler } from "hono";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { conversationIdSchema, scopesAllow } from "../core/conversation-id";
import { sha256Hex } from "../core/hash";
import { secretsEqual } from "../core/secrets";
import { findPrincipal } from "../storage/token-store";
import { problem } from "./errors";
import type { AppEnv } from "./types";

const BEARER = /^Bearer ([A-Za-z0-9_-]{16,256})$/;

/** Every /v1 route: a bearer token whose hash is on file and not revoked. */
export const requireToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  const match = BEARER.exec(c.req.header("authorization") ?? "");
  const token = match?.[1];
  const found = token === undefined ? undefined : await findPrincipal(c.env.DB, sha256Hex(token));
  if (token === undefined || found === undefined || !secretsEqual(sha256Hex(token), found.storedHash)) {
    c.header("WWW-Authenticate", 'Bearer realm="foldline"');
    return problem(c, { code: "unauthorized", message: "a valid bearer token is required" });
  }
  c.set("principal", found.principal);
  await next();
};

/**
 * The conversation named in the path, if it is well-formed and inside the token's scopes. A token
 * for one conversation gets the same `forbidden` for every other one, existing or not.
 */
export function scopedConversation(c: Context<AppEnv>): Result<string> {
  const parsed = conversationIdSchema.safeParse(c.req.param("conversation"));
  if (!parsed.success) {
    return fail("validation_failed", "conversation: expected telegram:<bot>:<chat>[:<thread>] or api:<key>");
  }
  if (!scopesAllow(c.get("principal").scopes, parsed.data)) {
    return fail("forbidden", "this token is not scoped to that conversation");
  }
  return ok(parsed.data);
}
