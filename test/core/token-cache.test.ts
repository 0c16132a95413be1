import { describe, expect, it } from "vitest";
import { TOKEN_CACHE_MAX_ENTRIES, TOKEN_CACHE_TTL_MS, TOKEN_REFUSAL_TTL_MS, TokenCache } from "../../src/api/token-cache";

/**
 * The isolate's token cache: an accepted token is trusted for `TOKEN_CACHE_TTL_MS`, a refused one
 * refused for the shorter `TOKEN_REFUSAL_TTL_MS`, each map bounded, and a fresh answer from D1
 * replaces whatever was held.
 */

const ada = { name: "ada", scopes: ["api:ada:*"] };

function clocked() {
  let now = 1_000_000;
  const cache = new TokenCache(() => now);
  return { cache, advance: (ms: number) => (now += ms) };
}

describe("TokenCache", () => {
  it("holds an accepted token until its TTL, then asks again", () => {
    const { cache, advance } = clocked();
    expect(cache.get("h1")).toBeUndefined();
    cache.put("h1", ada);
    expect(cache.get("h1")).toEqual({ principal: ada });
    advance(TOKEN_CACHE_TTL_MS - 1);
    expect(cache.get("h1")).toEqual({ principal: ada });
    advance(1);
    expect(cache.get("h1")).toBeUndefined();
    expect(cache.size().accepted).toBe(0);
  });

  it("holds a refusal for less time than an acceptance", () => {
    expect(TOKEN_REFUSAL_TTL_MS).toBeLessThan(TOKEN_CACHE_TTL_MS);
    const { cache, advance } = clocked();
    cache.put("h2", undefined);
    expect(cache.get("h2")).toEqual({ principal: null });
    advance(TOKEN_REFUSAL_TTL_MS - 1);
    expect(cache.get("h2")).toEqual({ principal: null });
    advance(1);
    expect(cache.get("h2")).toBeUndefined();
  });

  it("replaces what it held with D1's newer answer, either way", () => {
    const { cache } = clocked();
    cache.put("h3", ada);
    cache.put("h3", undefined);
    expect(cache.get("h3")).toEqual({ principal: null });
    cache.put("h3", ada);
    expect(cache.get("h3")).toEqual({ principal: ada });
    expect(cache.size()).toEqual({ accepted: 1, refused: 0 });
  });

  it("is bounded, dropping the oldest entry first, and refusals never evict acceptances", () => {
    const { cache } = clocked();
    for (let i = 0; i <= TOKEN_CACHE_MAX_ENTRIES; i++) cache.put(`a${i}`, ada);
    expect(cache.size().accepted).toBe(TOKEN_CACHE_MAX_ENTRIES);
    expect(cache.get("a0")).toBeUndefined();
    expect(cache.get(`a${TOKEN_CACHE_MAX_ENTRIES}`)).toEqual({ principal: ada });
    for (let i = 0; i < TOKEN_CACHE_MAX_ENTRIES * 2; i++) cache.put(`r${i}`, undefined);
    expect(cache.size()).toEqual({ accepted: TOKEN_CACHE_MAX_ENTRIES, refused: TOKEN_CACHE_MAX_ENTRIES });
    expect(cache.get("a1")).toEqual({ principal: ada });
  });
});
