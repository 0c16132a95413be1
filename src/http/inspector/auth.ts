import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { csrf } from "hono/csrf";
import { authenticate } from "../../api/access";
import type { Result } from "../../core/errors";
import { fail, ok } from "../../core/errors";
import { sha256Hex } from "../../core/hash";
import { secretsEqual } from "../../core/secrets";
import type { ApiPrincipal } from "../../storage/control/tokens";
import { randomOpaqueId } from "../../storage/control/tokens";
import { findSessionPrincipal, insertSession, revokeSession } from "../../storage/control/inspector-sessions";
import { LOGIN_PATH, INSPECTOR_ROOT } from "./paths";
import { sessionCookieSecure } from "./security";
import type { InspectorEnv } from "./types";

/**
 * Who is looking at the inspector. Signing in is judged by the API's own rule (`api/access`
 * `authenticate`, the same hashed tokens and scopes as /v1), and then the browser gets a session,
 * not the token: an opaque random id in an HttpOnly cookie scoped to /inspector, stored only as
 * its SHA-256, bound to the token's hash, expiring after `SESSION_SECONDS`, and revoked by logout
 * and by revoking the token (migration 0009). A stolen cookie is therefore worth nothing on /v1
 * and nothing after logout. A bearer header is accepted too, for curl and tests.
 */

export const SESSION_COOKIE = "foldline_inspector";

/** The same header form `requireToken` accepts on /v1. */
const BEARER = /^Bearer (\S*)$/;

/** Long enough for an operator's session, short enough that a forgotten browser does not hold a token for days. */
const SESSION_SECONDS = 8 * 60 * 60;

function cookieOptions(c: Context<InspectorEnv>) {
  return { path: INSPECTOR_ROOT, httpOnly: true, sameSite: "Strict", secure: sessionCookieSecure(c.req.url) } as const;
}

/** `fls_` and 256 random bits, base64url: not an API token's shape (`fl_…`), never confused with one. */
const SESSION_ID = /^fls_[A-Za-z0-9_-]{43}$/;

/** A new session for a token `authenticate` accepted; the cookie carries only the session id. */
export async function startSession(c: Context<InspectorEnv>, token: string, now: Date): Promise<void> {
  const id = randomOpaqueId("fls_");
  await insertSession(c.env.DB, sha256Hex(id), sha256Hex(token), now, new Date(now.getTime() + SESSION_SECONDS * 1_000));
  setCookie(c, SESSION_COOKIE, id, { ...cookieOptions(c), maxAge: SESSION_SECONDS });
}

/** Ends the browser's session on the server (a replayed cookie is refused) and clears the cookie. */
export async function endSession(c: Context<InspectorEnv>, now: Date): Promise<void> {
  const id = getCookie(c, SESSION_COOKIE);
  if (id !== undefined && SESSION_ID.test(id)) await revokeSession(c.env.DB, sha256Hex(id), now);
  clearSessionCookie(c);
}

/** The principal of a live session id; malformed, unknown, expired and revoked are one failure. */
async function sessionPrincipal(db: D1Database, id: string | undefined, now: Date): Promise<Result<ApiPrincipal>> {
  if (id === undefined || !SESSION_ID.test(id)) return fail("unauthorized", "no live session");
  const hash = sha256Hex(id);
  const found = await findSessionPrincipal(db, hash, now);
  if (found === undefined || !secretsEqual(hash, found.storedHash)) return fail("unauthorized", "no live session");
  return ok(found.principal);
}

function clearSessionCookie(c: Context<InspectorEnv>): void {
  deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
}

/**
 * Every inspector page but the login: a bearer header, authenticated exactly as /v1 does, or else
 * a live session cookie. Without either, the browser is sent to the login page (303, so a POST is
 * never replayed), and a cookie that is no live session (expired, logged out, token revoked) is
 * cleared.
 */
export const requireSession: MiddlewareHandler<InspectorEnv> = async (c, next) => {
  const cookie = getCookie(c, SESSION_COOKIE);
  const bearer = BEARER.exec(c.req.header("authorization") ?? "")?.[1];
  const principal = bearer !== undefined ? await authenticate(c.env.DB, bearer) : await sessionPrincipal(c.env.DB, cookie, new Date());
  if (!principal.ok) {
    if (cookie !== undefined) clearSessionCookie(c);
    return c.redirect(LOGIN_PATH, 303);
  }
  c.set("principal", principal.value);
  await next();
};

/**
 * Form posts only from the inspector's own pages. hono/csrf accepts a request whose
 * `Sec-Fetch-Site` is `same-origin` or whose `Origin` is this origin, and refuses (throws a 403)
 * every other form-encoded, multipart or text/plain post — the only kinds a cross-site page can
 * send without a CORS preflight. The pages send `Referrer-Policy: no-referrer`, under which
 * browsers send `Origin: null` on form posts, so in a browser `Sec-Fetch-Site` is the check that
 * passes; a client that sends neither header is refused.
 */
export const sameOriginPosts: MiddlewareHandler<InspectorEnv> = csrf();
