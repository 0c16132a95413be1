// Metric 2, D1 statements and batches per append: DERIVED FROM THE CODE, NOT MEASURED. Local
// workerd exposes no per-request D1 counters to an outside client (D1's `meta` stays inside the
// Worker), so this is a reading of the append path, written down with the file and function of
// every round trip. The bench checks whether the files it was read from have changed since, and
// says so in the report instead of silently presenting a stale derivation.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The files the derivation reads, with the SHA-256 of the versions it was written against. */
export const DERIVED_FROM = {
  // `sha256sum` of each file when the derivation was last checked by reading it: commits 45c3876
  // and 707cd79–6020e92 (the reply hand-off: no D1 statement when no agent has a built-in reply;
  // incidents recorded through recordIncident, off the append path), and 86206c7 (preflight from
  // the tail ledger's running totals: no statement added; the amendment lookup now runs only when
  // an event about outside history arrives; the head RPC removed; read-only inspector queries
  // added to event-store), the commit that added migration 0007 (serving declarations found
  // through declaration_sources), readDeliveries (the dispatcher's resume) and a reader for pages
  // of turns (since merged into context-store's readRelatedEvents), both off the append path; then a comment-only change to the engine;
  // then a type-only change to the engine's context manifest and event-store's readEventRange (the
  // paged chain audit's reader, off the append path); then the object's D1 meter (with
  // D1_METER on, its statements pass through a wrapper that counts only armed requests: the same
  // statements); then the engine's nothing-to-freeze skip (at the trigger only: below it, the
  // same skipped run); then the batch path (each source of a batch preflighted from the running
  // totals as of itself, the skipped run events of one append written together: a single source
  // append below the trigger is unchanged) and the activation frontier taken as of the activating
  // source; the object's durable wake-ups (a failed preflight schedules its catch-up in the object's
  // storage, not D1: the same statements). Add a file's new hash here after re-reading its append path.
  "src/durable/conversation-object.ts": [
    "2301b69c6a8d5d4568bd172f6286810bfb2cfc3581217b8c47042a5acd40d7b8",
    "84ed15817e14ed8a5d495f3580720b93cbd4f466cb7938ef2fd04dc355cabc1c",
    "f8020b910c959e876ec66956e8291fe1f1f683f375d09eef60980bdbbefa78c5",
    "6dc4a9ed64922cc65e222549ac629890efd90a87dfd436dcf337132a0b002937",
    "91309c6c4456b4f2ba6902985636a6d2fe42458808b9b6e01b9d936b589d5738",
  ],
  "src/durable/compaction-engine.ts": [
    "aa77e28728cdfffa345c33b8d1c304f598864f417833410976e0327b16b45383",
    "b05a88457922c5c7334adfb777f6424d225c03c1171361a47e2a306129c36bf5",
    "8e4e293eb7d0fc3e9e8eb35921ddaaa1ff1d84aa629667b8d63a67477d004cba",
    "72fd8af359ff7a449bc98958d3c5ca9cc8f3ca4f2f3fd9b865a46de05f36a849",
    "4866a28f7c608aa167797ee9fe8a5b7c899f0d748edc30cd9d4d564d4fcd3309",
    "2053975521d5f846c4b0b52ef6b276ab89a04941dd701563ee405043bec36b21",
    "65c1ea675925ba508de5cee410c71104dd2d3a3cab826c6decce8a52e62d8af9",
    "78f2faaf3aac21b375b3ee62037e69d1f75c702a73777f27851fb9530ac17f34",
    "52b3bdf49da35acbf3dcf0ba6eb2499c2887fd54d627dba80dc338ce88e20b90",
  ],
  "src/storage/event-store.ts": [
    "ee34f63cca1d2e1b249b99c2d2f75731d5460e493e4649f3a8db5ef8ee38a960",
    "816c845fc55f1f74a768d374614b7033e06ec0dd4f8d03ef6ed168cb87af025f",
    "1e9ba5f7eadb87a989505c1f66aa00df5a5c10b4e74431e4d83ea3afe234a822",
    "a414c8debdbd440dea232e68b3d14214bd0b6f5d2dc5d92924f8850219eb99cc",
    "1e9ba5f7eadb87a989505c1f66aa00df5a5c10b4e74431e4d83ea3afe234a822",
    "5aa013a85a42be427a831dc555e812d7f2126d408cf56b33c6882965d72a614b",
  ],
};

/**
 * One source append (`POST …/events`, a single `source` event) below the trigger, on a warm
 * Durable Object whose chain state is cached, one agent/compactor declaration serving the
 * conversation, no corrections or late deliveries pending (so no amendment lookup).
 */
export const SOURCE_APPEND_BELOW_TRIGGER = [
  {
    where: "Worker: requireToken → authenticate → findPrincipal (src/storage/token-store.ts)",
    kind: "single statement",
    statements: 1,
    what: "SELECT the bearer token's row by SHA-256",
  },
  {
    where: "Durable Object: append → #append → insertEvents (src/storage/event-store.ts)",
    kind: "batch (one transaction)",
    statements: 3,
    what: "INSERT OR IGNORE conversations; INSERT event ON CONFLICT DO NOTHING; SELECT the row by idempotency key. A single event is written optimistically: no read before it (the head seq is cached in the object).",
  },
  {
    where: "Durable Object: afterAppend → #servingDeclarations → servingDeclarations (src/storage/compaction-store.ts)",
    kind: "single statement",
    statements: 1,
    what: "SELECT the current declarations whose sources match this conversation: one probe of declaration_sources_by_prefix per prefix length of its id; only those are parsed with zod",
  },
  {
    where: "Durable Object: #preflight → skipped run event → insertEvents",
    kind: "batch (one transaction)",
    statements: 3,
    what: "the content-dark `skipped` run event, written like any append (same three statements)",
  },
];

export const NOTES = [
  "Per source append, below the trigger: 4 D1 round trips, 2 of them batches, 8 statements (3 round trips and 7 statements inside the Durable Object). Constant in the conversation's length: no statement reads history.",
  "Proposal, delivery and correction appends skip preflight: 2 round trips (token + one 3-statement batch).",
  "Each additional agent/compactor pair serving the same conversation adds its skipped run event to the same write (a write of more than one event first reads the existing keys: 1 statement, then 2 + k + 1 in the batch); a pair that plans writes its own planned batch. An agent with a built-in reply adds a queue send per source (no D1 statement).",
  "A batch append of n events first reads the existing keys (1 statement), then writes 2 + n + 1 statements in one batch; the skipped run events of all its sources and pairs are then written together (1 read + one batch), with a source that plans flushing those before it first. Each source is preflighted from the running totals as of itself, so the batch's preflights cost what n single appends' would, with no fold of the window.",
  "At the trigger the skipped batch is replaced by: documentChars (1 statement), recallPages (FTS5, 1–2 statements), an R2 put of the packet, one batch of 4 statements (planned run event + plan row), and a queue send.",
  "Cold object (first request after eviction): + Durable Object storage get (conversation id), readHead (1), and per chain readActivation, readHeadBoundary, readOpenPlan (3) and ceil(window events / 1,000) pages of the events after the head's coverage.",
  "The three round trips inside the object run one after another, and the object serializes a conversation's appends (#exclusive), so one conversation's append throughput is bounded by about 1 / (3 × the object's D1 round-trip time) — on Cloudflare, where D1 is not co-located with the object, that round trip is a network hop.",
  "Finding the serving declarations costs index probes (one per prefix length of the conversation id, at most 257) and parses only the declarations that serve the conversation: it does not grow with the number of agents in the deployment. A context call reads its one agent's declaration by primary key.",
];

/** @param {string} appDir the snapshot the bench ran */
export function derivationStatus(appDir) {
  /** @type {{ file: string, sha256: string | null, matches: boolean }[]} */
  const files = [];
  for (const [file, known] of Object.entries(DERIVED_FROM)) {
    const path = join(appDir, file);
    const sha256 = existsSync(path) ? createHash("sha256").update(readFileSync(path)).digest("hex") : null;
    files.push({ file, sha256, matches: sha256 !== null && known.includes(sha256) });
  }
  return { files, current: files.every((f) => f.matches) };
}
