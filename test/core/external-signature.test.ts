import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { signBody, verifySignature } from "../../src/external/signature";

const SECRET = "shared-hmac-key";
const NOW = 1_790_000_000;
const BODY = JSON.stringify({ version: 1, conversationId: "api:demo:1", request: { messages: [{ role: "user", content: "hi" }] } });

describe("external bot signatures", () => {
  it("signs as t=<seconds>,v1=<64 hex> and verifies its own signature", async () => {
    const header = await signBody(SECRET, BODY, NOW);
    expect(header).toMatch(/^t=1790000000,v1=[0-9a-f]{64}$/);
    expect(await verifySignature(SECRET, BODY, header, NOW)).toEqual({ ok: true });
    // Within the tolerance either way, the clock skew is accepted.
    expect(await verifySignature(SECRET, BODY, header, NOW + 300)).toEqual({ ok: true });
    expect(await verifySignature(SECRET, BODY, header, NOW - 300)).toEqual({ ok: true });
  });

  it("is the HMAC-SHA256 of \"<t>.<body>\" (interoperable with any HMAC library)", async () => {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(SECRET), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${NOW}.${BODY}`)));
    const hex = [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
    expect(await signBody(SECRET, BODY, NOW)).toBe(`t=${NOW},v1=${hex}`);
  });

  it("refuses a tampered body, a wrong secret, and a re-stamped signature", async () => {
    const header = await signBody(SECRET, BODY, NOW);
    expect(await verifySignature(SECRET, BODY.replace("hi", "ho"), header, NOW)).toEqual({ ok: false, reason: "mismatch" });
    expect(await verifySignature("another-key", BODY, header, NOW)).toEqual({ ok: false, reason: "mismatch" });
    // Moving the timestamp forward to dodge staleness breaks the MAC: t is signed too.
    const restamped = header.replace(`t=${NOW}`, `t=${NOW + 1}`);
    expect(await verifySignature(SECRET, BODY, restamped, NOW + 1)).toEqual({ ok: false, reason: "mismatch" });
  });

  it("refuses a stale or future timestamp before checking the MAC", async () => {
    const header = await signBody(SECRET, BODY, NOW);
    expect(await verifySignature(SECRET, BODY, header, NOW + 301)).toEqual({ ok: false, reason: "stale" });
    expect(await verifySignature(SECRET, BODY, header, NOW - 301)).toEqual({ ok: false, reason: "stale" });
    expect(await verifySignature(SECRET, BODY, header, NOW + 60, 30)).toEqual({ ok: false, reason: "stale" });
  });

  it("refuses malformed headers", async () => {
    const valid = await signBody(SECRET, BODY, NOW);
    const mac = valid.split("v1=")[1] ?? "";
    for (const header of [
      null,
      undefined,
      "",
      "garbage",
      `v1=${mac},t=${NOW}`,
      `t=${NOW}`,
      `t=${NOW},v1=${mac.slice(0, 63)}`,
      `t=${NOW},v1=${mac.toUpperCase()}`,
      `t=-${NOW},v1=${mac}`,
      `t=${NOW},v1=${mac},v1=${mac}`,
      `t=${NOW},v0=${mac}`,
    ]) {
      expect(await verifySignature(SECRET, BODY, header, NOW), String(header)).toEqual({ ok: false, reason: "malformed" });
    }
  });

  it("refuses a clock or a tolerance that is not a finite, non-negative number, whatever the header (never fails open)", async () => {
    const header = await signBody(SECRET, BODY, 0);
    const malformed = "garbage";
    for (const now of [Number.NaN, undefined, "x", "0", null, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, {}, 10n]) {
      for (const h of [header, malformed]) {
        await expect(verifySignature(SECRET, BODY, h, now as unknown as number), String(now)).rejects.toThrow(RangeError);
      }
    }
    for (const tolerance of [Number.NaN, Number.POSITIVE_INFINITY, -1, "300", null]) {
      await expect(verifySignature(SECRET, BODY, header, 0, tolerance as unknown as number), String(tolerance)).rejects.toThrow(RangeError);
    }
    // Left out, the tolerance is the default; a fractional clock (Date.now() / 1000) is a clock.
    expect(await verifySignature(SECRET, BODY, header, 0.5, undefined)).toEqual({ ok: true });
    expect(await verifySignature(SECRET, BODY, header, 300.5)).toEqual({ ok: false, reason: "stale" });
  });

  it("refuses an empty or non-text secret and a body that is not the raw text", async () => {
    const header = await signBody(SECRET, BODY, NOW);
    for (const secret of ["", undefined, null, 42]) {
      await expect(verifySignature(secret as unknown as string, BODY, header, NOW), String(secret)).rejects.toThrow(TypeError);
    }
    for (const body of [undefined, null, JSON.parse(BODY) as unknown, new TextEncoder().encode(BODY)]) {
      await expect(verifySignature(SECRET, body as string, header, NOW)).rejects.toThrow(TypeError);
    }
    expect(await verifySignature(SECRET, BODY, 12 as unknown as string, NOW)).toEqual({ ok: false, reason: "malformed" });
  });

  it("round-trips any body and rejects it once a single character changes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "binary", maxLength: 2_000 }), fc.string({ minLength: 1, maxLength: 64 }), fc.nat({ max: 4_000_000_000 }), async (body, secret, t) => {
        const header = await signBody(secret, body, t);
        expect(await verifySignature(secret, body, header, t)).toEqual({ ok: true });
        const tampered = `${body}x`;
        expect(await verifySignature(secret, tampered, header, t)).toEqual({ ok: false, reason: "mismatch" });
        expect(await verifySignature(`${secret}!`, body, header, t)).toEqual({ ok: false, reason: "mismatch" });
      }),
      { numRuns: 100 },
    );
  });
});
