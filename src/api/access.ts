import type { AgentRefusal } from "../core/agent-access";
import { agentAccess } from "../core/agent-access";
import type { AppError, Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { conversationIdSchema, scopesAllow } from "../core/conversation-id";
import { agentIdSchema } from "../core/events";
import { hasUnsafeChars, UNSAFE_MESSAGE } from "../core/names";
import { currentDeclaration } from "../storage/control/declarations";
import { sha256Hex } from "../core/hash";
import { secretsEqual } from "../core/secrets";
import type { ApiPrincipal } from "../storage/control/tokens";
import { findPrincipal } from "../storage/control/tokens";
import type { TokenCache } from "./token-cache";

/**
 * Who is calling and what they may touch, for every transport (HTTP routes, the RPC entrypoint).
 * Both shells hand the raw presented values here, so a token or a conversation id is judged by one
 * rule however it arrived.
 */

/** The shape of a token as `generateToken` makes it; anything else is refused before a D1 read. */
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{16,256}$/;

/**
 * The principal of a presented API token. Unknown, revoked and malformed tokens are one
 * `unauthorized`, so a caller learns nothing about which tokens exist. The stored hash is compared
 * in constant time even though the lookup already matched it: the lookup's timing is the
 * database's, the decision's is ours. With a `cache` (the `/v1` routes and the RPC entrypoint pass
 * the isolate's, `api/token-cache`), a recent answer for the same token hash is reused without
 * reading D1: a revocation takes effect within `TOKEN_CACHE_TTL_MS`.
 */
export async function authenticate(db: D1Database, token: unknown, cache?: TokenCache): Promise<Result<ApiPrincipal>> {
  if (typeof token !== "string" || !TOKEN_PATTERN.test(token)) return unauthorized();
  const hash = sha256Hex(token);
  const held = cache?.get(hash);
  if (held !== undefined) return held.principal === null ? unauthorized() : ok(held.principal);
  const found = await findPrincipal(db, hash);
  const principal = found !== undefined && secretsEqual(hash, found.storedHash) ? found.principal : undefined;
  cache?.put(hash, principal);
  return principal === undefined ? unauthorized() : ok(principal);
}

function unauthorized() {
  return fail("unauthorized", "a valid bearer token is required");
}

declare const scoped: unique symbol;
/**
 * A conversation id that is well-formed and inside the caller's scopes. Only `conversationInScope`
 * makes one, so an operation that takes it cannot be reached with an unchecked id.
 */
export type ScopedConversationId = string & { readonly [scoped]: true };

/**
 * The named conversation, if it is well-formed and inside the principal's scopes. A token for one
 * conversation gets the same `forbidden` for every other one, existing or not.
 */
export function conversationInScope(principal: ApiPrincipal, conversation: unknown): Result<ScopedConversationId> {
  if (typeof conversation === "string" && hasUnsafeChars(conversation)) return fail("unsafe_characters", `conversation: ${UNSAFE_MESSAGE}`);
  const parsed = conversationIdSchema.safeParse(conversation);
  if (!parsed.success) {
    return fail("validation_failed", "conversation: expected telegram:<bot>:<chat>[:<thread>] or api:<key>");
  }
  if (!scopesAllow(principal.scopes, parsed.data)) {
    return fail("forbidden", "this token is not scoped to that conversation");
  }
  return ok(parsed.data as ScopedConversationId);
}

/**
 * The answer about an agent the caller may not act on: the one an id nobody declared gets, in status,
 * code and words, so that holding `agent:<id>` (or `agent:*`) never tells a token whether some
 * declaration outside its scopes exists. Every agent route answers an undeclared id with it where it
 * has nothing to show (`readAgent`, a memory page write), and every refusal that depends on a stored
 * declaration the caller cannot see (its sources outside the caller's scopes, or an id of the pair it
 * proposes held by one) is it too. Only existence-free refusals stay `forbidden`: a token without the
 * agent scope at all, and the caller's own proposed patterns outside its scopes.
 */
export function agentNotFound(): AppError {
  return {
    code: "not_found",
    message: "no agent of that id that this token may act on (ids are global: one declared with sources outside this token's scopes can be neither read nor reused)",
  };
}

/**
 * The wire form of an agent refusal. A token without the agent scope is `forbidden` before anything
 * is read, whatever exists; a stored declaration whose sources the caller's scopes do not contain is
 * `agentNotFound`, as if there were none; only the caller's own proposed patterns are named back to it.
 */
function agentRefused(refusal: AgentRefusal): AppError {
  switch (refusal.reason) {
    case "agent_scope":
      return {
        code: "forbidden",
        message: "this token is not scoped to that agent (it needs agent:<id> and conversation scopes that contain every source the agent serves)",
      };
    case "stored_sources":
      return agentNotFound();
    case "proposed_sources":
      return {
        code: "forbidden",
        message: `sources outside this token's conversation scopes: ${refusal.outside.join(", ")} (an agent reads and writes every conversation its sources admit)`,
        details: { outside: refusal.outside },
      };
  }
}

/**
 * The named agent, if it is well-formed and the principal may act for it: `agent:<id>`, plus
 * conversation scopes containing every source pattern of its current declaration and of the
 * `proposed` one (a registration). See `core/agent-access`.
 */
export async function agentInScope(db: D1Database, principal: ApiPrincipal, agent: unknown, proposed?: readonly string[]): Promise<Result<string>> {
  return scopedAgent(db, principal, agent, { proposed, declared: false });
}

/**
 * The named agent, if it is declared and the principal may change it: the check registration makes
 * (`agent:<id>` and conversation scopes containing every source pattern of its declaration). A
 * write that outlives the request (a person's memory page) is taken only for a declared agent, so
 * nobody can leave pages behind for an id that whoever declares it later would be served;
 * `agentNotFound` for an id nobody declared, after the agent scope (a token without it learns
 * nothing), the same answer as for a declared agent the caller may not act on.
 */
export async function declaredAgentInScope(db: D1Database, principal: ApiPrincipal, agent: unknown): Promise<Result<string>> {
  return scopedAgent(db, principal, agent, { proposed: undefined, declared: true });
}

async function scopedAgent(db: D1Database, principal: ApiPrincipal, agent: unknown, options: { readonly proposed: readonly string[] | undefined; readonly declared: boolean }): Promise<Result<string>> {
  if (typeof agent === "string" && hasUnsafeChars(agent)) return fail("unsafe_characters", `agent: ${UNSAFE_MESSAGE}`);
  const parsed = agentIdSchema.safeParse(agent);
  if (!parsed.success) return fail("validation_failed", "agent: 1–64 letters, digits, . _ -");
  const early = agentAccess(principal.scopes, parsed.data, undefined);
  if (early !== undefined) return { ok: false, error: agentRefused(early) };
  const stored = await currentDeclaration(db, parsed.data);
  if (options.declared && stored === undefined) return { ok: false, error: agentNotFound() };
  const refusal = agentAccess(principal.scopes, parsed.data, stored?.registration.agent.sources, options.proposed);
  return refusal === undefined ? ok(parsed.data) : { ok: false, error: agentRefused(refusal) };
}

/**
 * The named agent, if it is well-formed and the principal holds its `agent:<id>` scope; its
 * declaration is not read. For reads that also need a conversation scope and are decided per
 * conversation by core/memory-privacy (a conversation's extracted pages).
 */
export function agentScopeHeld(principal: ApiPrincipal, agent: unknown): Result<string> {
  if (typeof agent === "string" && hasUnsafeChars(agent)) return fail("unsafe_characters", `agent: ${UNSAFE_MESSAGE}`);
  const parsed = agentIdSchema.safeParse(agent);
  if (!parsed.success) return fail("validation_failed", "agent: 1–64 letters, digits, . _ -");
  const refusal = agentAccess(principal.scopes, parsed.data, undefined);
  return refusal === undefined ? ok(parsed.data) : { ok: false, error: agentRefused(refusal) };
}

