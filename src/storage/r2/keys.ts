/**
 * The layout of the `DOCUMENTS` bucket. Every R2 key Foldline writes is built here and nowhere
 * else; plans and boundaries store the key they were written under, so a reader follows the stored
 * key rather than rebuilding it, and a change of layout here never strands an existing object.
 *
 * - `frontiers/<frontierId>.json`: an epoch's activation-frontier document;
 * - `packets/<conversationId, URI-encoded>/<agentId>/<runId>.json`: a compaction packet, the
 *   compactor's whole input, written before its job is queued;
 * - `<packet key without .json>/repairs/<attempt, 6 digits>.json`: a repair turn beside its packet
 *   (zero-padded, so the keys list in attempt order);
 * - `documents/<agentId>/<name>/<sha256>`: a trusted identity/memory document, by content hash.
 */

export const frontierDocumentKey = (frontierId: string): string => `frontiers/${frontierId}.json`;

export const packetDocumentKey = (conversationId: string, agentId: string, runId: string): string =>
  `packets/${encodeURIComponent(conversationId)}/${agentId}/${runId}.json`;

export const repairDocumentPrefix = (packetKey: string): string => `${packetKey.replace(/\.json$/, "")}/repairs/`;

export const repairDocumentKey = (packetKey: string, attempt: number): string => `${repairDocumentPrefix(packetKey)}${String(attempt).padStart(6, "0")}.json`;

export const trustedDocumentKey = (agentId: string, name: string, hash: string): string => `documents/${agentId}/${name}/${hash}`;
