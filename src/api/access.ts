import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { conversationIdSchema, scopesAllow } from "../core/conversation-id";
import { sha256Hex } from "../core/hash";
import { secretsEqual } from "../core/secrets";
import type { ApiPrincipal } from "../storage/token-store";
import { findPrincipal } from "../storage/token-store";

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
 * database's, the decision's is ours.
 */
export async function authenticate(db: D1Database, token: unknown): Promise<Result<ApiPrincipal>> {
  if (typeof token !== "string" || !TOKEN_PATTERN.test(token)) return unauthorized();
  const hash = sha256Hex(token);
  const found = await findPrincipal(db, hash);
  if (found === undefined || !secretsEqual(hash, found.storedHash)) return unauthorized();
  return ok(found.principal);
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
  const parsed = conversationIdSchema.safeParse(conversation);
  if (!parsed.success) {
    return fail("validation_failed", "conversation: expected telegram:<bot>:<chat>[:<thread>] or api:<key>");
  }
  if (!scopesAllow(principal.scopes, parsed.data)) {
    return fail("forbidden", "this token is not scoped to that conversation");
  }
  return ok(parsed.data as ScopedConversationId);
}
