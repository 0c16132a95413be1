import { describe, expect, it } from "vitest";
import { contentSecurityPolicy, newScriptNonce, securityHeaders, sessionCookieSecure } from "../../src/http/inspector/security";

describe("inspector security headers", () => {
  it("allows nothing but inline styles, same-origin images and form posts, and no framing", () => {
    expect(contentSecurityPolicy()).toBe("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'");
  });

  it("allows a script only by the nonce of its response", () => {
    const policy = contentSecurityPolicy("abc123==");
    expect(policy).toBe("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; script-src 'nonce-abc123=='");
  });

  it("sets the CSP, nosniff, no referrer and no caching on every response", () => {
    expect(securityHeaders()).toMatchObject({
      "Content-Security-Policy": contentSecurityPolicy(),
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "no-store",
    });
  });

  it("makes a fresh 128-bit nonce each time", () => {
    const nonces = new Set(Array.from({ length: 50 }, () => newScriptNonce()));
    expect(nonces.size).toBe(50);
    for (const nonce of nonces) {
      expect(nonce).toMatch(/^[A-Za-z0-9+/]{22}==$/);
    }
  });
});

describe("sessionCookieSecure", () => {
  it.each([
    ["http://127.0.0.1:8787/inspector/login", false],
    ["http://localhost:8787/inspector/login", false],
    ["http://[::1]:8787/inspector/login", false],
    ["https://127.0.0.1/inspector/login", true],
    ["https://foldline.example.workers.dev/inspector/login", true],
    ["http://foldline.test/inspector/login", true],
    ["http://127.0.0.1.example.com/inspector/login", true],
  ])("%s → Secure %s", (url, secure) => {
    expect(sessionCookieSecure(url)).toBe(secure);
  });
});
