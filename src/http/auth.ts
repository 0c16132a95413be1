import type { Context, MiddlewareHandler } from "hono";
import type { ScopedConversationId } from "../api/access";
import { agentInScope, authenticate, conversationInScope } from "../api/access";
import { isolateTokens } from "../api/token-cache";
import { opsMonitorToken } from "../config";
import { OPS_HEALTH_SCOPE } from "../core/ops";
import { secretsEqual } from "../core/secrets";
import type { ApiPrincipal } from "../storage/control/tokens";
import type { Result } from "../core/errors";
import { problem } from "./errors";
import type { AppEnv } from "./types";

const BEARER = /^Bearer (\S*)$/;

/** The health monitor (`OPS_MONITOR_TOKEN`): health and nothing else (`core/ops` `OPS_HEALTH_SCOPE`). */
const MONITOR: ApiPrincipal = { name: "ops-monitor", scopes: [OPS_HEALTH_SCOPE] };
const HEALTH_PATH = "/v1/ops/health";

/**
 * Whether the request is the health monitor's: `GET /v1/ops/health` with the Worker secret
 * `OPS_MONITOR_TOKEN` as its bearer, compared in constant time and never against the control
 * database, so it answers when that database does not. On any other route the secret is just an
 * unknown token.
 */
function isMonitor(c: Context<AppEnv>, presented: string | undefined): boolean {
  const monitor = opsMonitorToken(c.env);
  if (monitor === undefined || presented === undefined || c.req.method !== "GET" || c.req.path !== HEALTH_PATH) return false;
  return secretsEqual(presented, monitor);
}

/**
 * Every /v1 route: a bearer token whose hash is on file and not revoked (`api/access`), as this
 * isolate last read it within `TOKEN_CACHE_TTL_MS` (`api/token-cache`).
 */
export const requireToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  const presented = BEARER.exec(c.req.header("authorization") ?? "")?.[1];
  if (isMonitor(c, presented)) {
    c.set("principal", MONITOR);
    await next();
    return;
  }
  const principal = await authenticate(c.env.DB, presented, isolateTokens);
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
 * The agent named in the path, if the token may act for it (`api/access` `agentInScope`): its
 * `agent:<id>` scope (or a pattern matching it, such as `agent:*`) and conversation scopes that
 * contain every source the agent serves and, for a registration, every source it `proposed`.
 * Reading a conversation never grants rewriting the agent that reads it, and holding an agent never
 * grants the conversations it serves.
 */
export function scopedAgent(c: Context<AppEnv>, proposed?: readonly string[]): Promise<Result<string>> {
  return agentInScope(c.env.DB, c.get("principal"), c.req.param("agent"), proposed);
}
