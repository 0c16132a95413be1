import type { Context } from "hono";
import { Hono } from "hono";
import { authenticate } from "../../api/access";
import { endSession, sameOriginPosts, startSession } from "./auth";
import { INSPECTOR_ROOT, LOGIN_PATH } from "./paths";
import { newScriptNonce } from "./security";
import type { InspectorEnv } from "./types";
import { LoginPage } from "./views/login-page";

function loginPage(c: Context<InspectorEnv>, status: 200 | 401, error?: string) {
  const nonce = newScriptNonce();
  c.set("scriptNonce", nonce);
  return c.html(<LoginPage nonce={nonce} error={error} />, status);
}

/**
 * Sign in and out. The token is judged by `authenticate`, exactly as a bearer token on /v1, and
 * exchanged for a session (`startSession`); a refused one leaves no cookie behind and the answer
 * does not say why (unknown, revoked and malformed tokens are one failure there too). Logout
 * revokes the session on the server, not only the cookie in the browser.
 */
export const loginRoutes = new Hono<InspectorEnv>()
  .get("/login", (c) => loginPage(c, 200))
  .post("/login", sameOriginPosts, async (c) => {
    const form = await c.req.parseBody();
    const token = typeof form["token"] === "string" ? form["token"].trim() : undefined;
    const principal = await authenticate(c.env.DB, token);
    if (!principal.ok || token === undefined) return loginPage(c, 401, "That token is not valid.");
    await startSession(c, token, new Date());
    return c.redirect(INSPECTOR_ROOT, 303);
  })
  .post("/logout", sameOriginPosts, async (c) => {
    await endSession(c, new Date());
    return c.redirect(LOGIN_PATH, 303);
  });
