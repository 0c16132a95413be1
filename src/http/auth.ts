import type { Context, MiddlewareHandler } from "hono";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { conversationIdSchema, scopesAllow } from "../core/conversation-id";
import { agentIdSchema } from "../core/events";
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

/**
 * The agent named in the path, if the token holds `agent:<id>` (or a pattern matching it, such as
 * `agent:*`). Agent routes (declarations, documents, memory pages) are scoped separately from
 * conversations: reading a conversation never grants rewriting the agent that reads it.
 */
export function scopedAgent(c: Context<AppEnv>): Result<string> {
  const parsed = agentIdSchema.safeParse(c.req.param("agent"));
  if (!parsed.success) return fail("validation_failed", "agent: 1–64 letters, digits, . _ -");
  if (!scopesAllow(c.get("principal").scopes, `agent:${parsed.data}`)) {
    return fail("forbidden", "this token is not scoped to that agent (it needs agent:<id>)");
  }
  return ok(parsed.data);
}
