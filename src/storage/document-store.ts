import { sha256Hex } from "../core/hash";

/**
 * Immutable documents in R2: activation frontiers, compaction packets, identity/memory documents.
 * A document is written once under a key that names what it is, with its SHA-256 beside it; a
 * reader always re-hashes what it got, so a tampered or swapped object is refused, not believed.
 */

export async function putDocument(bucket: R2Bucket, key: string, text: string): Promise<string> {
  const hash = sha256Hex(text);
  await bucket.put(key, text, {
    httpMetadata: { contentType: "application/json; charset=utf-8" },
    customMetadata: { sha256: hash },
  });
  return hash;
}

export type DocumentRead = { ok: true; text: string } | { ok: false; reason: "missing" | "hash_mismatch" };

export async function readDocument(bucket: R2Bucket, key: string, expectedHash: string): Promise<DocumentRead> {
  const object = await bucket.get(key);
  if (object === null) return { ok: false, reason: "missing" };
  const text = await object.text();
  return sha256Hex(text) === expectedHash ? { ok: true, text } : { ok: false, reason: "hash_mismatch" };
}
