import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { csrf } from "hono/csrf";
import { authenticate } from "../../api/access";
import { LOGIN_PATH, INSPECTOR_ROOT } from "./paths";
import { sessionCookieSecure } from "./security";
import type { InspectorEnv } from "./types";

/**
 * Who is looking at the inspector. The API's own rule decides (`api/access` `authenticate`, the
 * same hashed tokens and scopes as /v1); what differs is only how a browser presents the token:
 * a link cannot carry a bearer header, so the login form puts the token in an HttpOnly cookie
 * scoped to /inspector. A bearer header is accepted too, for curl and tests.
 */

export const SESSION_COOKIE = "foldline_inspector";

/** The same header form `requireToken` accepts on /v1. */
const BEARER = /^Bearer (\S*)$/;

/** Long enough for an operator's session, short enough that a forgotten browser does not hold a token for days. */
const SESSION_SECONDS = 8 * 60 * 60;

function cookieOptions(c: Context<InspectorEnv>) {
  return { path: INSPECTOR_ROOT, httpOnly: true, sameSite: "Strict", secure: sessionCookieSecure(c.req.url) } as const;
}

export function setSessionCookie(c: Context<InspectorEnv>, token: string): void {
  setCookie(c, SESSION_COOKIE, token, { ...cookieOptions(c), maxAge: SESSION_SECONDS });
}

export function clearSessionCookie(c: Context<InspectorEnv>): void {
  deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
}

/**
 * Every inspector page but the login: the token from the bearer header or else the session
 * cookie, authenticated exactly as /v1 does. Without a valid one, the browser is sent to the login
 * page (303, so a POST is never replayed), and a cookie that no longer authenticates (revoked
 * token) is cleared.
 */
export const requireSession: MiddlewareHandler<InspectorEnv> = async (c, next) => {
  const cookie = getCookie(c, SESSION_COOKIE);
  const presented = BEARER.exec(c.req.header("authorization") ?? "")?.[1] ?? cookie;
  const principal = await authenticate(c.env.DB, presented);
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
