/**
 * The inspector's browser-facing security rules as plain data: the response headers every page
 * carries, and when its session cookie may go without `Secure`. The middleware and the session
 * helpers (`headers.ts`, `auth.ts`) only apply what these return.
 */

/**
 * Nothing loads from anywhere: no scripts, fonts, frames or connections; inline styles only (the
 * pages' own stylesheet and the bar's widths); forms post only back here; no page can be framed.
 * The login page adds exactly one inline script, allowed by its per-response nonce.
 */
export function contentSecurityPolicy(scriptNonce?: string): string {
  const directives = ["default-src 'none'", "style-src 'unsafe-inline'", "img-src 'self' data:", "form-action 'self'", "frame-ancestors 'none'"];
  if (scriptNonce !== undefined) directives.push(`script-src 'nonce-${scriptNonce}'`);
  return directives.join("; ");
}

/**
 * Every inspector response: the pages show conversation history and boundary summaries, so none
 * may be cached, sniffed into another type, framed, or leak its URL (conversation ids) onward.
 */
export function securityHeaders(scriptNonce?: string): Record<string, string> {
  return {
    "Content-Security-Policy": contentSecurityPolicy(scriptNonce),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
  };
}

const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * The session cookie is `Secure` unless the inspector is reached over plain http on the loopback
 * (`npm start` serves http://127.0.0.1:8787), where a `Secure` cookie would never be sent back.
 * Anywhere else over plain http the cookie stays `Secure`, so the browser drops it rather than
 * carry a token in the clear. (hono/cookie sets `Secure` only when asked to.)
 */
export function sessionCookieSecure(requestUrl: string): boolean {
  const url = new URL(requestUrl);
  return !(url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname));
}

/** A fresh script nonce: 128 random bits, base64 (the CSP nonce grammar). */
export function newScriptNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes));
}
