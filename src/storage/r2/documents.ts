import type { Result } from "../../core/errors";
import { sha256Hex } from "../../core/hash";
import type { Packet, TrustedDocument } from "../../core/packet";
import { packetSchema, pageBudget } from "../../core/packet";
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


/** Why an agent's subscribed documents cannot be given to anyone: one is gone or altered, or together they exceed the budget. */
export interface TrustedDocumentsRefused {
  readonly code: "unknown_document" | "document_budget_exceeded";
  readonly message: string;
}

/**
 * An agent's subscribed documents, each re-hashed on read (a missing or altered one is refused),
 * charged to its document budget exactly as they are sent (`core/packet` `pageBudget`: a reader
 * never gets a cut document). `pageChars`: what the budget leaves for recalled memory pages. The
 * one reader of trusted documents, for the compactor's packet, compose and built-in replies alike.
 */
export async function readTrustedDocuments(
  bucket: R2Bucket,
  agent: { readonly id: string; readonly documents: readonly { readonly name: string; readonly hash: string }[]; readonly documentBudgetChars: number },
): Promise<Result<{ documents: TrustedDocument[]; pageChars: number }, TrustedDocumentsRefused>> {
  const documents: TrustedDocument[] = [];
  for (const ref of agent.documents) {
    const read = await readDocument(bucket, trustedDocumentKey(agent.id, ref.name, ref.hash), ref.hash);
    if (!read.ok) return { ok: false, error: { code: "unknown_document", message: `document ${ref.name}@${ref.hash} is ${read.reason === "missing" ? "missing" : "altered"}` } };
    documents.push({ name: ref.name, hash: ref.hash, content: read.text });
  }
  const budget = pageBudget(documents, agent.documentBudgetChars);
  return budget.ok ? { ok: true, value: { documents, pageChars: budget.value } } : budget;
}

export type PacketReadResult = { readonly ok: true; readonly packet: Packet; readonly text: string } | { readonly ok: false; readonly reason: "missing" | "hash_mismatch" | "invalid" };

/**
 * A compaction packet read back: re-hashed against the hash its plan recorded, then parsed as
 * JSON and against the packet schema. The one reader of packets, for the queue consumer, the
 * extractor and the resolver alike; each then checks the packet is the one its job or plan names.
 * The text comes with it, so a step that hands the packet on (the consumer to settlement) hands
 * what it read, and the receiver checks it as a reader would (`packetOf`), without reading again.
 */
export async function readPacket(bucket: R2Bucket, key: string, expectedHash: string): Promise<PacketReadResult> {
  const object = await bucket.get(key);
  return object === null ? { ok: false, reason: "missing" } : packetOf(await object.text(), expectedHash);
}

/** A packet's text as a reader checks it: its SHA-256 must be `expectedHash`, its JSON a packet. */
export function packetOf(text: string, expectedHash: string): PacketReadResult {
  if (sha256Hex(text) !== expectedHash) return { ok: false, reason: "hash_mismatch" };
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    return { ok: false, reason: "invalid" };
  }
  const packet = packetSchema.safeParse(json);
  return packet.success ? { ok: true, packet: packet.data, text } : { ok: false, reason: "invalid" };
}
