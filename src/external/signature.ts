/**
 * Signing Foldline's requests to an external bot, and verifying them on the bot's side. One module
 * for both sides so they cannot drift apart; it uses WebCrypto only, so it runs unchanged in a
 * Worker, in Node ≥ 20, in Deno and in Bun.
 *
 * Foldline POSTs the JSON payload with the header
 *
 *     X-Foldline-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">
 *
 * keyed with the Worker secret the declaration names (`reply.secret`). The timestamp is inside the
 * MAC so a captured request cannot be replayed after the tolerance window. A bot verifies the raw
 * body text — before parsing it, since re-serialized JSON need not be byte-identical:
 *
 *     import { SIGNATURE_HEADER, verifySignature } from "foldline/client";
 *     const body = await request.text();
 *     const checked = await verifySignature(secret, body, request.headers.get(SIGNATURE_HEADER), Math.floor(Date.now() / 1000));
 *     if (!checked.ok) return new Response(checked.reason, { status: 401 });
 *     const payload = JSON.parse(body);  // { version, conversationId, agentId, source, request, manifest }
 *     return Response.json({ text: "…the reply…" });
 */

export const SIGNATURE_HEADER = "X-Foldline-Signature";
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type SignatureCheck = { readonly ok: true } | { readonly ok: false; readonly reason: "malformed" | "stale" | "mismatch" };

const encoder = new TextEncoder();

function hmacKey(secret: string, usage: "sign" | "verify"): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [usage]);
}

// Typed as what WebCrypto takes (not `Uint8Array`), so that this module compiles against both the
// Workers types and the DOM lib the client build uses (tsconfig.client.json), whose WebCrypto refuses
// a `Uint8Array` that may view a SharedArrayBuffer.
const signedText = (timestamp: number, body: string): BufferSource => encoder.encode(`${timestamp}.${body}`);

const toHex = (bytes: ArrayBuffer): string => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");

function fromHex(hex: string): BufferSource {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/** The header value for `body` sent at `timestamp` (unix seconds). */
export async function signBody(secret: string, body: string, timestamp: number): Promise<string> {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new RangeError("the timestamp must be a non-negative integer of unix seconds");
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(secret, "sign"), signedText(timestamp, body));
  return `t=${timestamp},v1=${toHex(mac)}`;
}

/** Exactly `t=<digits>,v1=<64 lowercase hex>`: anything else is refused before any MAC is computed. */
const HEADER = /^t=(\d{1,15}),v1=([0-9a-f]{64})$/;

/** A clock or a tolerance: a finite, non-negative number of seconds (NaN compares false with everything, so it would accept any age). */
function seconds(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite, non-negative number of seconds`);
  return value;
}

/**
 * Checks a signature header against the raw body. `nowSeconds` is passed in (rather than read) so
 * a bot can test its handler deterministically. The MAC is compared by `crypto.subtle.verify`,
 * which is constant-time, so response timing reveals nothing about how much of a forgery matched.
 *
 * Fails closed on a caller's mistake rather than answering about it: a clock or tolerance that is
 * not a finite, non-negative number throws a `RangeError` (a `NaN` clock would otherwise pass every
 * age check and accept a replay forever), a secret that is not a non-empty string or a body that is
 * not the raw text throws a `TypeError`, whatever the header says.
 * @public The helper a bot's own code imports; Foldline itself only signs.
 */
export async function verifySignature(
  secret: string,
  body: string,
  header: string | null | undefined,
  nowSeconds: number,
  toleranceSeconds = DEFAULT_TOLERANCE_SECONDS,
): Promise<SignatureCheck> {
  if (typeof secret !== "string" || secret === "") throw new TypeError("the secret must be a non-empty string");
  if (typeof body !== "string") throw new TypeError("the body must be the request's raw text, before it is parsed");
  const now = seconds(nowSeconds, "nowSeconds");
  const tolerance = seconds(toleranceSeconds, "toleranceSeconds");
  const match = typeof header === "string" ? HEADER.exec(header.trim()) : null;
  if (match === null) return { ok: false, reason: "malformed" };
  const [, t = "", v1 = ""] = match;
  const timestamp = Number(t);
  // Both directions: a timestamp from the future is as suspect as an old one (a skewed or forged clock).
  if (Math.abs(now - timestamp) > tolerance) return { ok: false, reason: "stale" };
  const valid = await crypto.subtle.verify("HMAC", await hmacKey(secret, "verify"), fromHex(v1), signedText(timestamp, body));
  return valid ? { ok: true } : { ok: false, reason: "mismatch" };
}
