import { z } from "zod";
import { scopePatternSchema } from "../../core/conversation-id";
import { sha256Hex } from "../../core/hash";

/**
 * API tokens. Only a token's SHA-256 is stored, so a leaked table grants nothing; the token is
 * shown once, when it is made (`npm run token`, or `createApiToken` in tests).
 */

export interface ApiPrincipal {
  readonly name: string;
  readonly scopes: readonly string[];
}

const scopesSchema = z.array(scopePatternSchema).min(1).max(64);

export const TOKEN_PREFIX = "fl_";

/** `prefix` and 256 random bits, base64url (43 characters): API tokens and inspector session ids. */
export function randomOpaqueId(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return prefix + btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

export function generateToken(): string {
  return randomOpaqueId(TOKEN_PREFIX);
}

/** @internal Makes a token through this module, the one owner of the token format, for the tests. */
export async function createApiToken(db: D1Database, name: string, scopes: readonly string[], now: Date): Promise<string> {
  const token = generateToken();
  await db
    .prepare("INSERT INTO api_tokens (token_hash, name, scopes, created_at) VALUES (?, ?, ?, ?)")
    .bind(sha256Hex(token), name, JSON.stringify(scopesSchema.parse(scopes)), now.toISOString())
    .run();
  return token;
}

/** The principal a presented token stands for, or undefined for unknown and revoked tokens. */
export async function findPrincipal(db: D1Database, tokenHash: string): Promise<{ principal: ApiPrincipal; storedHash: string } | undefined> {
  const row = await db
    .prepare("SELECT token_hash, name, scopes FROM api_tokens WHERE token_hash = ? AND revoked_at IS NULL")
    .bind(tokenHash)
    .first<{ token_hash: string; name: string; scopes: string }>();
  if (row === null) return undefined;
  const principal = principalOf(row);
  return principal === undefined ? undefined : { principal, storedHash: row.token_hash };
}

/** A stored token row as a principal; a row whose scopes no longer parse grants nothing. */
export function principalOf(row: { name: string; scopes: string }): ApiPrincipal | undefined {
  const scopes = scopesSchema.safeParse(JSON.parse(row.scopes) as unknown);
  return scopes.success ? { name: row.name, scopes: scopes.data } : undefined;
}
