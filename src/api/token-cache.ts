import type { ApiPrincipal } from "../storage/control/tokens";

/**
 * The API token check, held per Worker isolate so that a bot's steady stream of appends does not
 * read the token's row on every request. Keyed by the token's SHA-256 (never the token), bounded in
 * size, and short-lived: a token revoked (or whose scopes changed) in D1 is refused by every
 * isolate within `TOKEN_CACHE_TTL_MS` of the change. A refusal is held for less time than an
 * acceptance (`TOKEN_REFUSAL_TTL_MS`), and in a map of its own, so a flood of unknown tokens can
 * neither evict accepted ones nor lock out a token for longer than the acceptance window.
 */

/** How long an accepted token is trusted without reading D1 again: revocation takes effect within it. */
export const TOKEN_CACHE_TTL_MS = 30_000;
/** How long a refused token is refused without reading D1 again (shorter than an acceptance). */
export const TOKEN_REFUSAL_TTL_MS = 5_000;
/** Entries per map; the oldest entry goes first when one is full. */
export const TOKEN_CACHE_MAX_ENTRIES = 1_000;

/** A held answer: the principal of an accepted token, or `null` for a refused one. */
export type HeldToken = { readonly principal: ApiPrincipal | null } | undefined;

export class TokenCache {
  readonly #accepted = new Map<string, { principal: ApiPrincipal; expiresAt: number }>();
  readonly #refused = new Map<string, number>();
  #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** @internal The clock the tests move past the TTL. */
  setClock(now: () => number): void {
    this.#now = now;
  }

  /** What is held for a token hash and still fresh; undefined means D1 must be asked. */
  get(tokenHash: string): HeldToken {
    const now = this.#now();
    const accepted = this.#accepted.get(tokenHash);
    if (accepted !== undefined) {
      if (now < accepted.expiresAt) return { principal: accepted.principal };
      this.#accepted.delete(tokenHash);
    }
    const refusedUntil = this.#refused.get(tokenHash);
    if (refusedUntil !== undefined) {
      if (now < refusedUntil) return { principal: null };
      this.#refused.delete(tokenHash);
    }
    return undefined;
  }

  /** Holds what D1 answered for a token hash: its principal, or `undefined` for a refusal. */
  put(tokenHash: string, principal: ApiPrincipal | undefined): void {
    const now = this.#now();
    if (principal === undefined) {
      this.#accepted.delete(tokenHash);
      bounded(this.#refused, tokenHash, now + TOKEN_REFUSAL_TTL_MS);
    } else {
      this.#refused.delete(tokenHash);
      bounded(this.#accepted, tokenHash, { principal, expiresAt: now + TOKEN_CACHE_TTL_MS });
    }
  }

  /** Entries held now (accepted, refused), for the tests of the bound. */
  size(): { accepted: number; refused: number } {
    return { accepted: this.#accepted.size, refused: this.#refused.size };
  }
}

/** Sets `key` as the newest entry, dropping the oldest while the map is over its bound. */
function bounded<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > TOKEN_CACHE_MAX_ENTRIES) {
    const oldest = map.keys().next();
    if (oldest.done === true) break;
    map.delete(oldest.value);
  }
}

/** This isolate's cache: the `/v1` routes and the RPC entrypoint check bearer tokens through it. */
export const isolateTokens = new TokenCache();
