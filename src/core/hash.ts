import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

/**
 * RFC 8785 (JSON Canonicalization Scheme) text of a JSON value. Hashes in Foldline are always
 * taken over this form, so the same value hashes the same regardless of key order or spacing.
 */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("value has no JSON representation");
  return text;
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

export function hashCanonical(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
