import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/core/hash";
import { call, eventsPath, freshConversation, tokenFor } from "./helpers";

/**
 * Inspector sessions are sessions: the cookie holds an opaque random id, stored only hashed, bound
 * to the token that signed in, expiring, and revoked by logout and by revoking the token. The API
 * token never sits in a cookie, so a cookie is worth nothing on /v1.
 */

const ORIGIN = "http://foldline.test";
const SAME_ORIGIN = { origin: ORIGIN, "sec-fetch-site": "same-origin", "content-type": "application/x-www-form-urlencoded" };

function request(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
  return exports.default.fetch(new Request(`${ORIGIN}${path}`, { method: init.method ?? "GET", redirect: "manual", headers: init.headers ?? {}, ...(init.body === undefined ? {} : { body: init.body }) }));
}

/** Signs in; returns the token and the `name=value` the browser would send back. */
async function signIn(scope: string): Promise<{ token: string; cookie: string; value: string }> {
  const token = await tokenFor(scope);
  const res = await request("/inspector/login", { method: "POST", headers: SAME_ORIGIN, body: new URLSearchParams({ token }).toString() });
  expect(res.status).toBe(303);
  const cookie = res.headers.get("set-cookie")?.split(";")[0] ?? "";
  const value = cookie.slice(cookie.indexOf("=") + 1);
  return { token, cookie, value };
}

const signedIn = async (cookie: string): Promise<boolean> => {
  const res = await request("/inspector", { headers: { cookie } });
  await res.body?.cancel();
  return res.status === 200;
};

describe("inspector sessions", () => {
  it("never puts the token in the cookie; the cookie value is no bearer token on /v1", async () => {
    const conversation = freshConversation("api:sessions");
    const { token, cookie, value } = await signIn(conversation);
    expect(value.length).toBeGreaterThanOrEqual(32);
    expect(value).not.toContain(token);
    expect(token).not.toContain(value);
    expect(await signedIn(cookie)).toBe(true);
    const res = await call("GET", eventsPath(conversation), { token: value });
    expect(res.status).toBe(401);
    // Stored hashed, bound to the token's hash, with an expiry.
    const row = await env.DB.prepare("SELECT token_hash, expires_at, created_at FROM inspector_sessions WHERE session_hash = ?").bind(sha256Hex(value)).first<{ token_hash: string; expires_at: string; created_at: string }>();
    expect(row?.token_hash).toBe(sha256Hex(token));
    expect(Date.parse(row?.expires_at ?? "") - Date.parse(row?.created_at ?? "")).toBe(8 * 60 * 60 * 1_000);
    const raw = await env.DB.prepare("SELECT * FROM inspector_sessions").all();
    expect(JSON.stringify(raw.results)).not.toContain(value);
  });

  it("each sign-in is a new session; logout ends that session on the server, not only in the browser", async () => {
    const scope = `${freshConversation("api:sessions")}:*`;
    const first = await signIn(scope);
    const token = first.token;
    const second = await request("/inspector/login", { method: "POST", headers: SAME_ORIGIN, body: new URLSearchParams({ token }).toString() });
    const secondCookie = second.headers.get("set-cookie")?.split(";")[0] ?? "";
    expect(secondCookie).not.toBe(first.cookie);

    const logout = await request("/inspector/logout", { method: "POST", headers: { ...SAME_ORIGIN, cookie: first.cookie }, body: "" });
    expect(logout.status).toBe(303);
    // The old cookie, replayed by anyone who kept it, is refused; the other session is untouched.
    expect(await signedIn(first.cookie)).toBe(false);
    expect(await signedIn(secondCookie)).toBe(true);
  });

  it("revoking the token ends every session it signed in", async () => {
    const { token, cookie } = await signIn(`${freshConversation("api:sessions")}:*`);
    expect(await signedIn(cookie)).toBe(true);
    await env.DB.prepare("UPDATE api_tokens SET revoked_at = ? WHERE token_hash = ?").bind(new Date().toISOString(), sha256Hex(token)).run();
    expect(await signedIn(cookie)).toBe(false);
    const row = await env.DB.prepare("SELECT revoked_at FROM inspector_sessions WHERE token_hash = ?").bind(sha256Hex(token)).first<{ revoked_at: string | null }>();
    expect(row?.revoked_at).not.toBeNull();
  });

  it("an expired session is refused and cleared", async () => {
    const { value, cookie } = await signIn(`${freshConversation("api:sessions")}:*`);
    const past = (ms: number): string => new Date(Date.now() - ms).toISOString();
    await env.DB.prepare("UPDATE inspector_sessions SET created_at = ?, expires_at = ? WHERE session_hash = ?").bind(past(9 * 60 * 60 * 1_000), past(1_000), sha256Hex(value)).run();
    const res = await request("/inspector", { headers: { cookie } });
    expect(res.status).toBe(303);
    expect(res.headers.get("set-cookie")).toMatch(/^foldline_inspector=; Max-Age=0/);
  });
});
