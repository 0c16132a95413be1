import { z } from "zod";
import { conversationIdSchema } from "../core/conversation-id";
import { registrationWarningSchema } from "../core/registration-warnings";
import { documentNameSchema, registrationSchema, sha256Schema } from "../core/declarations";
import { agentIdSchema, authorSchema, eventKinds, idempotencyKeySchema } from "../core/events";
import { memoryPathSchema } from "../core/memory-path";
import { contextManifestSchema } from "../core/context-manifest";
import { INCIDENT_KINDS } from "../storage/shard/incidents";
import { count, id, isoTime, position, seq } from "./response-fields";

/**
 * The JSON success bodies of the HTTP API, as schemas: `/openapi.json` describes every response
 * with them (converted as output shapes, so a defaulted field is required), and the views that
 * build the bodies are checked against them by the compiler where their types allow (`Wire`).
 * They describe, they never parse: no route runs a response through them, so they cost nothing
 * at request time.
 *
 * Every object is strict, so a field a view adds without documenting it fails the integration test
 * that validates real responses against the served document. Shapes that already have a schema
 * (event bodies, declarations, amendments, model evidence) are reused, not restated. A field the
 * service always sends, possibly as null, is nullable rather than optional.
 */


/** An event as the log stores and the API renders it: the input's fields and what the log assigned. */
export const storedEventSchema = eventKinds({
  conversationId: conversationIdSchema,
  seq: position,
  idempotencyKey: idempotencyKeySchema,
  sensitive: z.boolean(),
  /** SHA-256 of the canonical envelope (`eventHash`); excludes `seq` and `recordedAt`. */
  hash: sha256Schema,
  recordedAt: isoTime,
});

export const appendedEventSchema = z.strictObject({
  event: storedEventSchema,
  /** A replay of the same idempotency key and payload (answered 200, not 201). */
  duplicate: z.boolean(),
});

export const appendedBatchSchema = z.strictObject({
  results: z.array(appendedEventSchema),
  /** The conversation's latest sequence number after the batch. */
  lastSeq: seq,
});

export const eventPageSchema = z.strictObject({
  events: z.array(storedEventSchema),
  /** The cursor of the next page; null once this page reached the end of the log. */
  nextAfter: seq.nullable(),
});

/** An effective turn of the canonical reconstruction (`core/reconstruction`). */
export const turnSchema = z.strictObject({
  id,
  group: seq,
  role: z.enum(["user", "assistant"]),
  author: authorSchema,
  text: z.string(),
  hash: sha256Schema,
  originSeq: position,
  effectiveSeq: position,
  messageId: z.string(),
  sensitive: z.boolean(),
  edited: z.boolean(),
});

export const turnPageSchema = z.strictObject({
  turns: z.array(turnSchema),
  nextAfter: seq.nullable(),
});

/** A provider-ready message: envelopes speak as `user`, exact turns as their author's role. */
export const contextMessageSchema = z.strictObject({
  role: z.enum(["system", "user", "assistant"]),
  content: z.string(),
});

/** Provenance of a served context (`core/context-manifest`, where its type is inferred from it). */
export { contextManifestSchema };

export const contextResponseSchema = z.strictObject({
  messages: z.array(contextMessageSchema),
  manifest: contextManifestSchema,
});

/** A stored trusted document, without its content: what an upload answers and what a composition used. */
export const documentSummarySchema = z.strictObject({ name: documentNameSchema, hash: sha256Schema, chars: count });

export const trustedDocumentSchema = z.strictObject({ name: documentNameSchema, hash: sha256Schema, content: z.string() });

/** One OpenAI chat-completions request body; only trusted documents speak as `system`. */
export const chatRequestSchema = z.strictObject({
  model: z.string(),
  messages: z.array(
    z.union([
      contextMessageSchema,
      z.strictObject({
        role: z.literal("user"),
        content: z.array(
          z.discriminatedUnion("type", [
            z.strictObject({ type: z.literal("text"), text: z.string() }),
            z.strictObject({
              type: z.literal("image_url"),
              image_url: z.strictObject({ url: z.string(), detail: z.enum(["auto", "low", "high"]).optional() }),
            }),
          ]),
        ),
      }),
    ]),
  ),
});

export const composeManifestSchema = contextManifestSchema.extend({ documents: z.array(documentSummarySchema) });

export const composeResponseSchema = z.strictObject({
  request: chatRequestSchema,
  manifest: composeManifestSchema,
});

/**
 * An event (a failed attempt, a refused delivery) is one incident seen once. A condition that holds
 * across calls (a chain the resolver refuses on every context call, a deadline that keeps failing)
 * is one incident while `open`: each further occurrence raises `count` and moves `lastSeenAt` on the
 * same row (same id), and the operator is notified once; it closes when what it concerns works again,
 * and the next occurrence opens a new incident.
 */
const incidentFields = {
  id: position,
  /** Null for an incident of the conversation's own bookkeeping (a catch-up deadline), not of one agent. */
  agentId: agentIdSchema.nullable(),
  runId: id.nullable(),
  kind: z.enum(INCIDENT_KINDS),
  code: z.string(),
  message: z.string(),
  /** When it was first seen. */
  createdAt: isoTime,
  /** How many times it was seen while open (1 for an event). */
  count: z.number().int().positive(),
  lastSeenAt: isoTime,
  open: z.boolean(),
};

/**
 * A conversation's incident, for a token scoped to it: `message` is the service's own words (codes,
 * ids, counts), `detail` what a counterpart said (a bot's or a provider's error text), if anything.
 */
export const incidentSchema = z.strictObject({ ...incidentFields, detail: z.string().nullable() });

export const incidentPageSchema = z.strictObject({
  incidents: z.array(incidentSchema),
  nextAfter: position.nullable(),
});

/** An incident of any conversation, as the operator reads the fleet's: with its conversation and the shard that keeps it. */
export const fleetIncidentSchema = z.strictObject({ ...incidentFields, conversationId: z.string(), shard: z.string() });

export const fleetIncidentPageSchema = z.strictObject({
  incidents: z.array(fleetIncidentSchema),
  /** Pass as `cursor` for the next page; null on the last. */
  nextCursor: z.string().nullable(),
});

const probeError = z.enum(["timeout", "unavailable", "failed"]);

export const opsHealthSchema = z.strictObject({
  /** Every database reachable and at its expected migration, the bucket reachable, and at least one shard open. */
  ok: z.boolean(),
  checkedAt: isoTime,
  databases: z.array(
    z.strictObject({
      binding: z.string(),
      role: z.enum(["control", "shard"]),
      reachable: z.boolean(),
      error: probeError.optional(),
      /** The newest migration applied, null when none (or unreachable). */
      migration: z.string().nullable(),
      expectedMigration: z.string(),
      current: z.boolean(),
      /** For a shard: whether it takes new conversations (`SHARDS_CLOSED`). */
      open: z.boolean().optional(),
    }),
  ),
  storage: z.strictObject({ binding: z.string(), reachable: z.boolean(), error: probeError.optional() }),
  openShards: z.array(z.string()),
  /** The plan that has waited longest for its boundary, on any shard. */
  oldestOpenPlan: z.strictObject({ conversationId: z.string(), agentId: z.string(), runId: z.string(), plannedAt: isoTime, shard: z.string(), ageSeconds: z.number().int().nonnegative() }).nullable(),
  /** Chains the resolver refuses now (one open `resolver_failure` incident each). */
  failingChains: z.number().int().nonnegative(),
  incidentsLastHour: z.number().int().nonnegative(),
  /** How many shards answered the two counts above. */
  shardsCounted: z.number().int().nonnegative(),
});

/** `version:fingerprint`: the key an agent's chain lives under; a changed pair or prompt is a new epoch. */
export const epochSchema = z.strictObject({
  compactorVersion: z.string(),
  fingerprint: sha256Schema,
  id,
});

const storedAgentSchema = z.strictObject({
  agentId: agentIdSchema,
  revision: position,
  epoch: epochSchema,
  promptHash: sha256Schema,
  registration: registrationSchema,
});

/** A registration answer: the pair as stored, canonical and with every default filled in, and what the operator should know about it. */
export const registeredAgentSchema = storedAgentSchema.extend({ warnings: z.array(registrationWarningSchema) });

export const currentAgentSchema = storedAgentSchema.extend({ createdAt: isoTime });

export const memoryPageSummarySchema = z.strictObject({
  path: memoryPathSchema,
  version: position,
  /** SHA-256 (hex) of the content's UTF-8 bytes. */
  contentHash: sha256Schema,
  /** JavaScript string length of the content. */
  chars: count,
});

export const memoryPageListSchema = z.strictObject({
  pages: z.array(memoryPageSummarySchema),
  /** The path to pass as `after` for the next page; null once this page reached the end. */
  nextAfter: memoryPathSchema.nullable(),
});

export const memoryPageWriteSchema = z.strictObject({
  path: memoryPathSchema,
  version: position,
  contentHash: sha256Schema,
  /** False when the content equals the current version's: nothing was written. */
  created: z.boolean(),
});

/** Where one extracted fact came from: a message of a conversation's log, and the extraction run that read it. */
export const factSourceViewSchema = z.strictObject({
  conversationId: z.string(),
  messageId: z.string(),
  seq: position,
  eventHash: sha256Schema,
  runId: z.string(),
  /** The page version that set the fact to its value. */
  version: position,
});

export const memoryPageSchema = memoryPageSummarySchema.extend({
  content: z.string(),
  createdAt: isoTime,
  /** With `provenance=1`: each fact of an extracted page at this version, with its sources (empty for a person's page). */
  facts: z.array(z.strictObject({ key: z.string(), sources: z.array(factSourceViewSchema) })).optional(),
});

/** One message a recalled item came from: its platform id (a reply's proposal id) and the log's sequence. */
export const recallSourceSchema = z.strictObject({ messageId: z.string(), seq: position });

/**
 * A recall hit: a memory page of the agent (`path`) or an exact turn of the conversation, with a
 * snippet of the match (matched terms between « and ») and the whole content.
 */
export const recallResultSchema = z.strictObject({
  /** A turn of the log, one current statement of an extracted page, or a page a person wrote, whole. */
  type: z.enum(["turn", "entry", "page"]),
  path: memoryPathSchema.optional(),
  /** An entry's fact key on its page. */
  key: z.string().optional(),
  /** The conversation an entry was said in, when it is another than the one searched (an agent that shares memory); its sources are that conversation's messages. */
  conversationId: z.string().optional(),
  snippet: z.string(),
  content: z.string(),
  sources: z.array(recallSourceSchema),
});

export const memorySearchSchema = z.strictObject({ results: z.array(recallResultSchema) });

/** Every valid update is answered 200 (Telegram retries anything else for a day): stored, or why not. */
export const telegramWebhookAnswerSchema = z.union([
  z.strictObject({ ok: z.literal(true), seq: position, duplicate: z.boolean() }),
  z.strictObject({ ok: z.literal(true), ignored: z.string() }),
]);

export const serviceIndexSchema = z.strictObject({
  service: z.string(),
  about: z.string(),
  endpoints: z.array(z.string()),
});

export const healthSchema = z.strictObject({ ok: z.literal(true) });

/**
 * `/openapi.json` itself: an OpenAPI 3.1 document, whose own schema is the specification's. Only
 * its top level is described here, and loosely, as the one body not meant for client types.
 */
export const openApiDocumentSchema = z.looseObject({
  openapi: z.literal("3.1.0"),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.looseObject({})),
  components: z.looseObject({}),
});

/**
 * The type of a body a schema describes, as views build it, so that a view ties itself to its
 * schema with `satisfies Wire<typeof schema>`: a missing or mistyped field is then a compile error,
 * and so is an undocumented one written in an object literal. Readonly all the way down, so values
 * built from the domain's readonly types conform; stored events in their `Merged` form.
 */
export type Wire<S extends z.ZodType> = WireOf<z.output<S>>;

type StoredEventOutput = z.output<typeof storedEventSchema>;

type WireOf<T> = [T] extends [StoredEventOutput] ? Merged<DeepReadonly<StoredEventOutput>> : DeepReadonly<T>;

type DeepReadonly<T> = T extends readonly (infer I)[] ? readonly WireOf<I>[] : T extends object ? { readonly [K in keyof T]: WireOf<T[K]> } : T;

/**
 * A union of object types as one object type whose every field takes the union of the members'
 * types. `eventView` copies a stored event field by field (`kind: event.kind, body: event.body`),
 * which builds this rather than the union: the compiler cannot correlate copied fields. So a
 * rendered event is checked field by field, and that its `kind` and `body` agree is the domain
 * type `StoredEvent`'s own guarantee.
 */
type Merged<U> = { readonly [K in U extends unknown ? keyof U : never]: U extends { readonly [P in K]: infer V } ? V : never };
