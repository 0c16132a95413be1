import type { ApiPrincipal } from "./tokens";
import { principalOf } from "./tokens";

/**
 * Inspector sessions (migration 0009): rows keyed by the SHA-256 of an opaque session id, bound to
 * the hash of the token that signed in. The id itself is never stored.
 */

export async function insertSession(db: D1Database, sessionHash: string, tokenHash: string, now: Date, expiresAt: Date): Promise<void> {
  await db.batch([
    // Expired rows are of no use to anyone; each sign-in sweeps them, so the table stays small.
    db.prepare("DELETE FROM inspector_sessions WHERE expires_at < ?").bind(now.toISOString()),
    db
      .prepare("INSERT INTO inspector_sessions (session_hash, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)")
      .bind(sessionHash, tokenHash, now.toISOString(), expiresAt.toISOString()),
  ]);
}

/** The principal of a live session: unexpired, unrevoked, and its token unrevoked. */
export async function findSessionPrincipal(db: D1Database, sessionHash: string, now: Date): Promise<{ principal: ApiPrincipal; storedHash: string } | undefined> {
  const row = await db
    .prepare(
      `SELECT s.session_hash, t.name, t.scopes FROM inspector_sessions s JOIN api_tokens t ON t.token_hash = s.token_hash
       WHERE s.session_hash = ? AND s.revoked_at IS NULL AND s.expires_at > ? AND t.revoked_at IS NULL`,
    )
    .bind(sessionHash, now.toISOString())
    .first<{ session_hash: string; name: string; scopes: string }>();
  if (row === null) return undefined;
  const principal = principalOf(row);
  return principal === undefined ? undefined : { principal, storedHash: row.session_hash };
}

export async function revokeSession(db: D1Database, sessionHash: string, now: Date): Promise<void> {
  await db.prepare("UPDATE inspector_sessions SET revoked_at = ? WHERE session_hash = ? AND revoked_at IS NULL").bind(now.toISOString(), sessionHash).run();
}
