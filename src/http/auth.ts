import type { Context, MiddlewareHandler } from "hono";
import type { ScopedConversationId } from "../api/access";
import { authenticate, conversationInScope } from "../api/access";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { scopesAllow } from "../core/conversation-id";
import { agentIdSchema } from "../core/events";
import { problem } from "./errors";
import type { AppEnv } from "./types";

const BEARER = /^Bearer (\S*)$/;

/** Every /v1 route: a bearer token whose hash is on file and not revoked (`api/access`). */
export const requireToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  const principal = await authenticate(c.env.DB, BEARER.exec(c.req.header("authorization") ?? "")?.[1]);
  if (!principal.ok) {
    c.header("WWW-Authenticate", 'Bearer realm="foldline"');
    return problem(c, principal.error);
  }
  c.set("principal", principal.value);
  await next();
};

/**
 * The conversation named in the path, if it is well-formed and inside the token's scopes. A token
 * for one conversation gets the same `forbidden` for every other one, existing or not.
 */
export function scopedConversation(c: Context<AppEnv>): Result<ScopedConversationId> {
  return conversationInScope(c.get("principal"), c.req.param("conversation"));
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
