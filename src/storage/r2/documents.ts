import { sha256Hex } from "../../core/hash";
import { trustedDocumentKey } from "./keys";

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


/** An agent's subscribed documents, each re-hashed on read; a missing or altered one is refused. */
export async function readTrustedDocuments(
  bucket: R2Bucket,
  agentId: string,
  refs: readonly { readonly name: string; readonly hash: string }[],
): Promise<{ ok: true; value: { name: string; hash: string; content: string }[] } | { ok: false; error: { code: "unknown_document"; message: string } }> {
  const documents: { name: string; hash: string; content: string }[] = [];
  for (const ref of refs) {
    const read = await readDocument(bucket, trustedDocumentKey(agentId, ref.name, ref.hash), ref.hash);
    if (!read.ok) return { ok: false, error: { code: "unknown_document", message: `document ${ref.name}@${ref.hash} is ${read.reason === "missing" ? "missing" : "altered"}` } };
    documents.push({ name: ref.name, hash: ref.hash, content: read.text });
  }
  return { ok: true, value: documents };
}
