import { z } from "zod";
import { agentQuery, linkPageQuery, pageQuery } from "../../api/queries";
import { composeRequestSchema } from "../../core/compose";
import { conversationIdSchema, TELEGRAM_BOT_ID } from "../../core/conversation-id";
import {
  agentDeclarationSchema,
  compactionPolicySchema,
  compactorDeclarationSchema,
  contextPolicySchema,
  documentNameSchema,
  documentRefSchema,
  providerSchema,
  registrationSchema,
  replySchema,
  sha256Schema,
} from "../../core/declarations";
import type { ErrorCode } from "../../core/errors";
import { ERROR_STATUS } from "../../core/errors";
import {
  agentIdSchema,
  appendBatchRequestSchema,
  appendEventRequestSchema,
  attachmentSchema,
  authorSchema,
  correctionBodySchema,
  deliveryBodySchema,
  eventInputSchema,
  proposalBodySchema,
  runBodySchema,
  sourceBodySchema,
} from "../../core/events";
import { memoryPathSchema, putMemoryPageSchema } from "../../core/memory-path";
import { telegramUpdateSchema } from "../../core/telegram-update";
import { documentBodySchema } from "../../api/agents";
import { turnsQuery } from "../../api/turns";
import { memoryListQuery, memoryVersionQuery } from "../../api/memory";
import { problemSchema } from "./problem";
import {
  appendedBatchSchema,
  appendedEventSchema,
  auditCheckSchema,
  chainAuditSchema,
  chainHealthSchema,
  chainListingSchema,
  chatRequestSchema,
  composeManifestSchema,
  composeResponseSchema,
  contextManifestSchema,
  contextMessageSchema,
  contextResponseSchema,
  currentAgentSchema,
  documentSummarySchema,
  epochAuditSchema,
  epochSchema,
  eventPageSchema,
  healthSchema,
  incidentPageSchema,
  incidentSchema,
  linkAuditSchema,
  linkPageSchema,
  listedBoundarySchema,
  memoryPageListSchema,
  memoryPageSchema,
  memoryPageSummarySchema,
  memoryPageWriteSchema,
  openApiDocumentSchema,
  registeredAgentSchema,
  serviceIndexSchema,
  storedEventSchema,
  telegramWebhookAnswerSchema,
  trustedDocumentSchema,
  turnPageSchema,
  turnSchema,
} from "../../api/responses";

/**
 * The OpenAPI 3.1 description of the HTTP API, generated from the same zod schemas the routes
 * validate with: a shape is never written twice, so the document cannot drift from what a route
 * accepts. What is written here is only what zod cannot know — which route takes which schema,
 * the prose, and which error codes each operation can answer with (statuses come from
 * `ERROR_STATUS`). Success bodies are described by the schemas of `api/responses`: the views that
 * build them are type-checked against those where their types allow (`Wire`), and an integration
 * test validates a real response of every operation and status against the served document.
 *
 * Request and response shapes are converted separately, because one zod schema reads differently
 * in the two directions: as a request (`io: "input"`) a defaulted field is optional, as a response
 * (`io: "output"`) the service always sends it. Each direction has its own registry; a component
 * both use keeps one name only when it converts identically both ways (checked as the document is
 * built), and otherwise its response form is named `<Name>Output`.
 */

export type JsonSchema = z.core.JSONSchema._JSONSchema;
export type HttpMethod = "get" | "put" | "post" | "delete";

export interface ParameterObject {
  readonly name: string;
  readonly in: "path" | "query";
  readonly required: boolean;
  readonly description?: string;
  readonly schema: JsonSchema;
}

export interface MediaTypeObject {
  readonly schema?: JsonSchema;
}

export interface ResponseObject {
  readonly description: string;
  readonly content?: Readonly<Record<string, MediaTypeObject>>;
}

export interface OperationObject {
  readonly operationId: string;
  readonly summary: string;
  readonly description: string;
  readonly tags: readonly string[];
  /** `[]` where no credential is needed (the document sets no global requirement). */
  readonly security: readonly Readonly<Record<string, readonly string[]>>[];
  readonly parameters: readonly ParameterObject[];
  readonly requestBody?: { readonly required: true; readonly content: Readonly<Record<string, MediaTypeObject>> };
  readonly responses: Readonly<Record<string, ResponseObject>>;
}

export interface TagObject {
  readonly name: string;
  readonly description: string;
}

export type SecuritySchemeObject =
  | { readonly type: "http"; readonly scheme: "bearer"; readonly description: string }
  | { readonly type: "apiKey"; readonly in: "header"; readonly name: string; readonly description: string };

export interface OpenApiDocument {
  readonly openapi: "3.1.0";
  readonly info: { readonly title: string; readonly version: string; readonly description: string };
  readonly tags: readonly TagObject[];
  readonly paths: Readonly<Record<string, Readonly<Partial<Record<HttpMethod, OperationObject>>>>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonSchema>>;
    readonly securitySchemes: Readonly<Record<string, SecuritySchemeObject>>;
  };
}

export const SCHEMA_REF_PREFIX = "#/components/schemas/";

const TAGS = [
  { name: "events", description: "The immutable event log: appends, pages of the log, and the effective turns reconstructed from it." },
  { name: "context", description: "What an agent is served: its verified context and one composed provider request." },
  { name: "chain", description: "The operator's audit of an agent's boundary chain, and the conversation's incident rows." },
  { name: "agents", description: "Declarations (an agent with its reciprocal compactor) and trusted identity/memory documents." },
  { name: "memory", description: "Versioned memory pages of an agent, recalled for its compactor within the document budget." },
  { name: "telegram", description: "Telegram ingress." },
  { name: "service", description: "Liveness and this reference." },
] as const satisfies readonly TagObject[];

type Tag = (typeof TAGS)[number]["name"];

/** The event bodies and their parts: request and response components alike, under the same names. */
const EVENT_PARTS: readonly (readonly [string, z.ZodType])[] = [
  ["SourceBody", sourceBodySchema],
  ["CorrectionBody", correctionBodySchema],
  ["ProposalBody", proposalBodySchema],
  ["DeliveryBody", deliveryBodySchema],
  ["RunBody", runBodySchema],
  ["Author", authorSchema],
  ["Attachment", attachmentSchema],
];

/**
 * Request components, listed under `components.schemas` and referenced wherever they occur (a
 * batch's events refer to `EventInput`, every event variant to its body schema). Everything not
 * named here or in `RESPONSE_COMPONENTS` is inlined by the converter.
 */
const COMPONENTS: readonly (readonly [string, z.ZodType])[] = [
  ["Problem", problemSchema],
  ["AppendEventRequest", appendEventRequestSchema],
  ["AppendBatchRequest", appendBatchRequestSchema],
  ["EventInput", eventInputSchema],
  ...EVENT_PARTS,
  ["Registration", registrationSchema],
  ["AgentDeclaration", agentDeclarationSchema],
  ["CompactorDeclaration", compactorDeclarationSchema],
  ["Provider", providerSchema],
  ["DocumentRef", documentRefSchema],
  ["Reply", replySchema],
  ["ContextPolicy", contextPolicySchema],
  ["CompactionPolicy", compactionPolicySchema],
  ["ComposeRequest", composeRequestSchema],
  ["DocumentBody", documentBodySchema],
  ["MemoryPageBody", putMemoryPageSchema],
  ["TelegramUpdate", telegramUpdateSchema],
];

/**
 * Response components: every JSON success body, and the parts worth a name of their own. Event
 * bodies and the declaration's plain parts are request components too and keep their names (they
 * read the same both ways); the registration and everything in it with a default are listed
 * under their `Output` names, since as responses those fields are always present.
 */
const RESPONSE_COMPONENTS: readonly (readonly [string, z.ZodType])[] = [
  ["StoredEvent", storedEventSchema],
  ["AppendedEvent", appendedEventSchema],
  ["AppendedBatch", appendedBatchSchema],
  ["EventPage", eventPageSchema],
  ["Turn", turnSchema],
  ["TurnPage", turnPageSchema],
  ["ContextMessage", contextMessageSchema],
  ["ContextManifest", contextManifestSchema],
  ["ContextResponse", contextResponseSchema],
  ["ChatRequest", chatRequestSchema],
  ["ComposeManifest", composeManifestSchema],
  ["ComposeResponse", composeResponseSchema],
  ["ListedBoundary", listedBoundarySchema],
  ["ChainListing", chainListingSchema],
  ["ChainHealth", chainHealthSchema],
  ["AuditCheck", auditCheckSchema],
  ["LinkAudit", linkAuditSchema],
  ["EpochAudit", epochAuditSchema],
  ["ChainAudit", chainAuditSchema],
  ["LinkPage", linkPageSchema],
  ["Incident", incidentSchema],
  ["IncidentPage", incidentPageSchema],
  ["Epoch", epochSchema],
  ["RegisteredAgent", registeredAgentSchema],
  ["CurrentAgent", currentAgentSchema],
  ["DocumentSummary", documentSummarySchema],
  ["TrustedDocument", trustedDocumentSchema],
  ["MemoryPageSummary", memoryPageSummarySchema],
  ["MemoryPageList", memoryPageListSchema],
  ["MemoryPageWrite", memoryPageWriteSchema],
  ["MemoryPage", memoryPageSchema],
  ["TelegramWebhookAnswer", telegramWebhookAnswerSchema],
  ["ServiceIndex", serviceIndexSchema],
  ["Health", healthSchema],
  ["OpenApiDocument", openApiDocumentSchema],
  ...EVENT_PARTS,
  ["Provider", providerSchema],
  ["DocumentRef", documentRefSchema],
  ["RegistrationOutput", registrationSchema],
  ["AgentDeclarationOutput", agentDeclarationSchema],
  ["CompactorDeclarationOutput", compactorDeclarationSchema],
  ["ReplyOutput", replySchema],
  ["ContextPolicyOutput", contextPolicySchema],
  ["CompactionPolicyOutput", compactionPolicySchema],
];

interface Success {
  readonly status: number;
  /** Short prose; the body's shape is `schema`'s. */
  readonly description: string;
  /** Absent: no body (204). */
  readonly media?: "application/json" | "text/html";
  /** One of `RESPONSE_COMPONENTS`; every JSON success has one. */
  readonly schema?: z.ZodType;
}

interface OperationSpec {
  readonly method: HttpMethod;
  /** OpenAPI form (`{param}`); every parameter must be described in `pathParameters`. */
  readonly path: string;
  readonly operationId: string;
  readonly tag: Tag;
  readonly summary: string;
  readonly description: string;
  readonly query?: { readonly schema: z.ZodType; readonly notes: Readonly<Record<string, string>> };
  /** One of `COMPONENTS`. */
  readonly body?: z.ZodType;
  readonly success: readonly Success[];
  /** Codes particular to this operation; those every route of its kind can answer are added by `errorCodesOf`. */
  readonly errors?: readonly ErrorCode[];
}

const json = "application/json" as const;

const PAGE_NOTES = {
  after: "the last sequence number already read; 0 reads from the start",
  limit: "most events in the page (1–500)",
} as const;

const OPERATIONS: readonly OperationSpec[] = [
  {
    method: "post",
    path: "/v1/conversations/{conversation}/events",
    operationId: "appendEvent",
    tag: "events",
    summary: "Append one event",
    description:
      "Appends one `source`, `correction`, `proposal`, `delivery` or `run` event. The idempotency key makes retries safe: " +
      "the same key with the same payload is a replay (200), with another payload `idempotency_conflict`. With `expectedSeq`, " +
      "a stale belief about the conversation's latest sequence is `sequence_conflict` (with `currentSeq`). Compactor runs and " +
      "the idempotency prefixes `run:`, `tg:`, `reply:` and `dispatch:` are reserved (`forbidden`). A failed request changes nothing.",
    body: appendEventRequestSchema,
    success: [
      { status: 201, description: "appended (`duplicate: false`)", media: json, schema: appendedEventSchema },
      { status: 200, description: "a replay of the same key and payload (`duplicate: true`)", media: json, schema: appendedEventSchema },
    ],
    errors: ["idempotency_conflict", "sequence_conflict"],
  },
  {
    method: "post",
    path: "/v1/conversations/{conversation}/events/batch",
    operationId: "appendBatch",
    tag: "events",
    summary: "Append a batch of events, all or none",
    description:
      "Appends up to 100 events in order, in one transaction: either every event is stored (or replayed) or none is. " +
      "One reserved event refuses the whole batch.",
    body: appendBatchRequestSchema,
    success: [
      { status: 201, description: "at least one event was new", media: json, schema: appendedBatchSchema },
      { status: 200, description: "every event was a replay", media: json, schema: appendedBatchSchema },
    ],
    errors: ["idempotency_conflict", "sequence_conflict"],
  },
  {
    method: "get",
    path: "/v1/conversations/{conversation}/events",
    operationId: "listEvents",
    tag: "events",
    summary: "Read the log",
    description: "The raw, immutable log, paged by sequence. `nextAfter` is the next cursor, or null once the page reached the end.",
    query: { schema: pageQuery, notes: PAGE_NOTES },
    success: [{ status: 200, description: "a page of stored events", media: json, schema: eventPageSchema }],
  },
  {
    method: "get",
    path: "/v1/conversations/{conversation}/turns",
    operationId: "listTurns",
    tag: "events",
    summary: "Read the effective turns",
    description:
      "The canonical reconstruction of the conversation (edits applied, deletions removed, delivered replies in the group " +
      "of the message they answer), paged by whole groups: a page may exceed `limit` to finish the group it stopped in.",
    query: {
      schema: turnsQuery,
      notes: {
        after: "the last group already read; 0 reads from the start",
        limit: "turns in the page (1–500), exceeded only to finish a group",
        agents: "comma-separated agent ids whose delivered replies count as history; omitted: every agent",
        sensitive: "`include` adds sensitive turns",
      },
    },
    success: [{ status: 200, description: "a page of effective turns", media: json, schema: turnPageSchema }],
  },
  {
    method: "get",
    path: "/v1/conversations/{conversation}/context",
    operationId: "getContext",
    tag: "context",
    summary: "The agent's verified context",
    description:
      "Provider-ready `messages` (boundary envelope, amendment envelope, exact tail) and a private `manifest` (boundary id, " +
      "hash and coverage, amendment items and hash, tail, omitted groups, reservations). The chain head is verified on every " +
      "request; when it cannot be, the answer is `chain_invalid` with a `reason` (`missing_link`, `fork`, `stale_declaration`, " +
      "`divergent_hash`, `wrong_route`, `fabricated_run`, `non_advancing`), a `cause` naming the exact condition (e.g. `body_mismatch`, " +
      "`packet_mismatch`, `anchor_mismatch`, `plan_mismatch`) and the `check`, `field`, `expected` and `found` behind it; nothing unverified is served.",
    query: { schema: agentQuery, notes: { agent: "the agent whose view is served" } },
    success: [{ status: 200, description: "the messages and their manifest", media: json, schema: contextResponseSchema }],
    errors: ["not_found", "chain_invalid", "amendment_too_large", "context_budget_exceeded"],
  },
  {
    method: "post",
    path: "/v1/conversations/{conversation}/compose",
    operationId: "compose",
    tag: "context",
    summary: "Compose one provider request",
    description:
      "One OpenAI chat-completions body over the agent's verified context: its trusted documents as the only system content, " +
      "then the selected history, then the prompt (images as `image_url` parts).",
    body: composeRequestSchema,
    success: [{ status: 200, description: "the provider request and its manifest", media: json, schema: composeResponseSchema }],
    errors: ["not_found", "chain_invalid", "amendment_too_large", "context_budget_exceeded", "unknown_document", "document_budget_exceeded"],
  },
  {
    method: "get",
    path: "/v1/conversations/{conversation}/chain",
    operationId: "listChain",
    tag: "chain",
    summary: "The boundary chain",
    description:
      "Every boundary of the agent in this conversation, across epochs, oldest first. Previews only: boundaries are sensitive. " +
      "`health` says whether the chain is moving: the plan in flight (its age, how often its job was sent, its failed attempts, " +
      "when its watchdog fires next), the re-plan time of a chain backing off after a dead-letter, and the newest compaction failure.",
    query: { schema: agentQuery, notes: { agent: "the agent whose chain is listed" } },
    success: [{ status: 200, description: "every boundary, oldest first", media: json, schema: chainListingSchema }],
    errors: ["not_found"],
  },
  {
    method: "get",
    path: "/v1/conversations/{conversation}/verify",
    operationId: "verifyChain",
    tag: "chain",
    summary: "Verify the boundary chain",
    description:
      "Recomputes every hash from D1 events and R2 packets and reports each link valid or the checks it failed, and each " +
      "epoch's `anchor`: whether its newest stored boundary is the one the log's newest completed run settled, with the same " +
      "hash and content hash (a head row deleted or rewritten behind the service's back fails it). It reads the " +
      "whole log and every packet of every epoch: for a long chain, `verifyLinks` audits it a page at a time.",
    query: { schema: agentQuery, notes: { agent: "the agent whose chain is verified" } },
    success: [{ status: 200, description: "the audit: every link with its verdict", media: json, schema: chainAuditSchema }],
    errors: ["not_found"],
  },
  {
    method: "get",
    path: "/v1/conversations/{conversation}/verify/links",
    operationId: "verifyLinks",
    tag: "chain",
    summary: "Verify a page of the boundary chain",
    description:
      "Audits the links of one epoch at positions after `after`, each exactly as `verifyChain` reports it, at the cost of the " +
      "page alone: its boundary rows and their neighbours, its plans, packets and completed-run receipts, and the ranges of " +
      "the log its frozen slices were cut from. Every page also carries the epoch's `anchor`, as `verifyChain` reports it. " +
      "Follow `nextAfter` to verify a chain of any length; it is valid when every " +
      "page of every epoch is. An epoch the agent never had is an empty page.",
    query: {
      schema: linkPageQuery,
      notes: {
        agent: "the agent whose chain is verified",
        epoch: "the epoch to verify; the agent's current epoch when absent",
        after: "the last position already verified; 0 from the first link",
        limit: "most positions in the page (1–50)",
      },
    },
    success: [{ status: 200, description: "the page: its links with their verdicts, and `nextAfter`", media: json, schema: linkPageSchema }],
    errors: ["not_found"],
  },
  {
    method: "get",
    path: "/v1/conversations/{conversation}/incidents",
    operationId: "listIncidents",
    tag: "chain",
    summary: "Incident rows",
    description:
      "Private incident rows (compactor, plan, resolver, agent and delivery failures), oldest first, paged by incident id, " +
      "so a new incident always lands behind the cursor.",
    query: { schema: pageQuery, notes: { after: "the last incident id already read; 0 reads from the start", limit: "most incidents in the page (1–500)" } },
    success: [{ status: 200, description: "a page of incidents", media: json, schema: incidentPageSchema }],
  },
  {
    method: "put",
    path: "/v1/agents/{agent}",
    operationId: "putAgent",
    tag: "agents",
    summary: "Register an agent and its compactor",
    description:
      "Registers the declaration pair. The two must agree on everything the contract lists; `declaration_mismatch` names " +
      "every field on which they disagree. A changed pair (or prompt, or compactor version) is a new epoch. The token needs " +
      "`agent:<id>` and conversation scopes that contain every source pattern the agent has now and would have afterwards " +
      "(`forbidden` names the proposed patterns outside them). An `http` reply names a Worker secret `BOT_HMAC_<NAME>`; " +
      "any other name is `secret_outside_namespace`. Identical concurrent requests are one registration (201 once, 200 after); " +
      "a request that lost the race to a different declaration gets `declaration_conflict` (409): read the current declaration and retry.",
    body: registrationSchema,
    success: [
      { status: 201, description: "a new revision", media: json, schema: registeredAgentSchema },
      { status: 200, description: "unchanged", media: json, schema: registeredAgentSchema },
    ],
    errors: ["declaration_mismatch", "id_in_use", "declaration_conflict", "unknown_document", "secret_outside_namespace"],
  },
  {
    method: "get",
    path: "/v1/agents/{agent}",
    operationId: "getAgent",
    tag: "agents",
    summary: "The current declaration",
    description: "The agent's current declaration pair, revision and epoch.",
    success: [{ status: 200, description: "the current revision", media: json, schema: currentAgentSchema }],
    errors: ["not_found"],
  },
  {
    method: "put",
    path: "/v1/agents/{agent}/documents/{name}",
    operationId: "putDocument",
    tag: "agents",
    summary: "Store a trusted document",
    description: "A trusted identity/memory document, stored under its SHA-256; declarations subscribe to `{ name, hash }`.",
    body: documentBodySchema,
    success: [{ status: 201, description: "stored", media: json, schema: documentSummarySchema }],
  },
  {
    method: "get",
    path: "/v1/agents/{agent}/documents/{name}/{hash}",
    operationId: "getDocument",
    tag: "agents",
    summary: "Read a trusted document",
    description: "The document stored under this name and hash, re-verified against the hash as it is read.",
    success: [{ status: 200, description: "the document", media: json, schema: trustedDocumentSchema }],
    errors: ["not_found"],
  },
  {
    method: "get",
    path: "/v1/agents/{agent}/memory",
    operationId: "listMemoryPages",
    tag: "memory",
    summary: "List memory pages",
    description: "The agent's current memory pages, ordered by path, without their content.",
    query: { schema: memoryListQuery, notes: { after: "the last path already read; empty reads from the start", limit: "most pages listed" } },
    success: [{ status: 200, description: "a page of the listing", media: json, schema: memoryPageListSchema }],
  },
  {
    method: "put",
    path: "/v1/agents/{agent}/memory/{path}",
    operationId: "putMemoryPage",
    tag: "memory",
    summary: "Write a memory page",
    description: "Writes a new version of the page (indexed for recall); the same content as the current version changes nothing.",
    body: putMemoryPageSchema,
    success: [
      { status: 201, description: "a new version (`created: true`)", media: json, schema: memoryPageWriteSchema },
      { status: 200, description: "unchanged (`created: false`)", media: json, schema: memoryPageWriteSchema },
    ],
  },
  {
    method: "get",
    path: "/v1/agents/{agent}/memory/{path}",
    operationId: "getMemoryPage",
    tag: "memory",
    summary: "Read a memory page",
    description: "The page's current version, or the version asked for.",
    query: { schema: memoryVersionQuery, notes: { version: "a past version; omitted: the current one" } },
    success: [{ status: 200, description: "the page", media: json, schema: memoryPageSchema }],
    errors: ["not_found"],
  },
  {
    method: "delete",
    path: "/v1/agents/{agent}/memory/{path}",
    operationId: "deleteMemoryPage",
    tag: "memory",
    summary: "Delete a memory page",
    description: "Deletes the page; its past versions stay stored.",
    success: [{ status: 204, description: "deleted" }],
    errors: ["not_found"],
  },
  {
    method: "post",
    path: "/telegram/{bot}/webhook",
    operationId: "telegramWebhook",
    tag: "telegram",
    summary: "Telegram webhook",
    description:
      "Telegram ingress. `message`/`channel_post` become sources, `edited_message`/`edited_channel_post` corrections; " +
      "`update_id` is the idempotency key (`tg:update:<id>`). Every update Telegram sent validly is answered 200, including " +
      "kinds that are not used and redeliveries, because Telegram retries non-2xx answers for a day.",
    body: telegramUpdateSchema,
    success: [{ status: 200, description: "stored (`seq`, `duplicate`), or `ignored` with the reason", media: json, schema: telegramWebhookAnswerSchema }],
  },
  {
    method: "get",
    path: "/",
    operationId: "serviceIndex",
    tag: "service",
    summary: "What this service is",
    description: "The service's name and its main endpoints.",
    success: [{ status: 200, description: "the service's name and main endpoints", media: json, schema: serviceIndexSchema }],
  },
  {
    method: "get",
    path: "/healthz",
    operationId: "health",
    tag: "service",
    summary: "Liveness",
    description: "Answers as long as the Worker runs; touches no binding.",
    success: [{ status: 200, description: "alive", media: json, schema: healthSchema }],
  },
  {
    method: "get",
    path: "/openapi.json",
    operationId: "openApiDocument",
    tag: "service",
    summary: "This API description",
    description: "The OpenAPI 3.1 document, generated from the zod schemas the routes validate with.",
    success: [{ status: 200, description: "the OpenAPI document", media: json, schema: openApiDocumentSchema }],
  },
  {
    method: "get",
    path: "/reference",
    operationId: "reference",
    tag: "service",
    summary: "This API description as a page",
    description: "The same document rendered as HTML.",
    success: [{ status: 200, description: "the reference page", media: "text/html" }],
  },
];

/**
 * What every route of a kind can answer, besides its own codes: `/v1` routes authenticate and
 * check the path's conversation or agent against the token's scopes; a body is checked for media
 * type, JSON and size before its shape; any route can fail unexpectedly (`app.onError`).
 */
function errorCodesOf(spec: OperationSpec): ErrorCode[] {
  const codes = new Set<ErrorCode>(spec.errors);
  if (spec.path.startsWith("/v1/")) for (const code of ["unauthorized", "forbidden", "validation_failed", "unsafe_characters"] as const) codes.add(code);
  if (spec.path.startsWith("/telegram/")) codes.add("unauthorized");
  if (spec.query !== undefined) codes.add("validation_failed");
  if (spec.body !== undefined) {
    for (const code of ["invalid_json", "validation_failed", "payload_too_large", "unsupported_media_type"] as const) codes.add(code);
  }
  codes.add("internal");
  return [...codes];
}

/** Mirrors where `app.ts` mounts authentication: the bearer middleware on `/v1/*`, the webhook's own secret check. */
function securityOf(path: string): OperationObject["security"] {
  if (path.startsWith("/v1/")) return [{ bearerAuth: [] }];
  if (path.startsWith("/telegram/")) return [{ telegramSecretToken: [] }];
  return [];
}

/** Request shapes: defaults make fields optional, coerced query values are described by what they coerce to. */
function inputSchemaOf(schema: z.ZodType): z.core.JSONSchema.JSONSchema {
  const { $schema: _dialect, $id: _id, ...rest } = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input", unrepresentable: "any" });
  return rest;
}

function pathParameters(): Readonly<Record<string, { readonly schema: JsonSchema; readonly description: string }>> {
  return {
    conversation: {
      schema: inputSchemaOf(conversationIdSchema),
      description:
        "`telegram:<botId>:<chatId>`, `telegram:<botId>:<chatId>:<threadId>` for a forum topic, or `api:<key>` " +
        "(letters, digits, `._:-`); it must be inside the token's scopes",
    },
    agent: {
      schema: inputSchemaOf(agentIdSchema),
      description: "the agent's id; the token needs the scope `agent:<id>` (or a pattern matching it) and conversation scopes that contain every source the agent serves",
    },
    bot: { schema: { type: "string", pattern: TELEGRAM_BOT_ID.source }, description: "the bot's numeric id; its secret is the Worker secret `TELEGRAM_WEBHOOK_SECRET_<botId>`" },
    name: { schema: inputSchemaOf(documentNameSchema), description: "the document's name" },
    hash: { schema: inputSchemaOf(sha256Schema), description: "the SHA-256 of the document's content" },
    path: {
      schema: inputSchemaOf(memoryPathSchema),
      description:
        "the page path, such as `decisions/venue`: `/`-separated segments of letters, digits and `._-`, never `.` or `..`; " +
        "each segment is percent-decoded on its own, so an encoded `/` is refused",
    },
  };
}

function queryParameters(query: NonNullable<OperationSpec["query"]>): ParameterObject[] {
  const schema = inputSchemaOf(query.schema);
  const required = new Set(schema.required);
  return Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const description = query.notes[name];
    return { name, in: "query", required: required.has(name), ...(description === undefined ? {} : { description }), schema: property };
  });
}

function errorResponses(codes: readonly ErrorCode[]): Record<string, ResponseObject> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, statusCodes]) => [
      String(status),
      {
        description: statusCodes.map((code) => `\`${code}\``).join(", "),
        content: {
          [json]: {
            schema: {
              allOf: [
                { $ref: `${SCHEMA_REF_PREFIX}Problem` },
                { properties: { error: { properties: { code: { enum: statusCodes } } } } },
              ],
            },
          },
        },
      },
    ]),
  );
}

/**
 * One direction's components, converted together so that each refers to the others by `$ref`
 * (every reference is `#/components/schemas/<id>`, whichever registry the target is in). What is
 * not registered is inlined by the converter.
 */
function convertComponents(components: readonly (readonly [string, z.ZodType])[], io: "input" | "output") {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of components) registry.add(schema, { id });
  const converted = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
    uri: (id) => `${SCHEMA_REF_PREFIX}${id}`,
  }).schemas;
  const schemas: Record<string, JsonSchema> = Object.fromEntries(
    Object.entries(converted).map(([id, { $schema: _dialect, $id: _id, ...schema }]) => [id, schema]),
  );
  return { registry, schemas };
}

/**
 * Both directions' components under one `components.schemas`. A name in both must denote the
 * same shape both ways; a schema whose output differs from its input (a default, a transform), or
 * which refers to one that does, needs its own name in `RESPONSE_COMPONENTS`.
 */
function mergeComponents(input: Readonly<Record<string, JsonSchema>>, output: Readonly<Record<string, JsonSchema>>): Record<string, JsonSchema> {
  for (const [id, schema] of Object.entries(output)) {
    const request = input[id];
    if (request !== undefined && JSON.stringify(request) !== JSON.stringify(schema)) {
      throw new Error(`component ${id} reads differently as a response than as a request: name its response form ${id}Output, or name the components it refers to`);
    }
  }
  return { ...input, ...output };
}

function buildDocument(): OpenApiDocument {
  const { registry, schemas: requestSchemas } = convertComponents(COMPONENTS, "input");
  const { registry: responseRegistry, schemas: responseSchemas } = convertComponents(RESPONSE_COMPONENTS, "output");
  const schemas = mergeComponents(requestSchemas, responseSchemas);

  const params = pathParameters();
  const paths: Record<string, Partial<Record<HttpMethod, OperationObject>>> = {};
  for (const spec of OPERATIONS) {
    const pathParams = [...spec.path.matchAll(/\{(\w+)\}/g)].map(([, name = ""]) => {
      const param = params[name];
      if (param === undefined) throw new Error(`${spec.operationId}: path parameter {${name}} is not described`);
      return { name, in: "path" as const, required: true, description: param.description, schema: param.schema };
    });
    const bodyId = spec.body === undefined ? undefined : registry.get(spec.body)?.id;
    if (spec.body !== undefined && bodyId === undefined) throw new Error(`${spec.operationId}: its request body is not a named component`);
    const successes = Object.fromEntries(
      spec.success.map((s): [string, ResponseObject] => {
        const schemaId = s.schema === undefined ? undefined : responseRegistry.get(s.schema)?.id;
        if (s.schema !== undefined && schemaId === undefined) throw new Error(`${spec.operationId} ${s.status}: its response body is not a named component`);
        if (s.media === json && schemaId === undefined) throw new Error(`${spec.operationId} ${s.status}: a JSON response needs a schema`);
        const media = s.media === undefined ? {} : { content: { [s.media]: schemaId === undefined ? {} : { schema: { $ref: `${SCHEMA_REF_PREFIX}${schemaId}` } } } };
        return [String(s.status), { description: s.description, ...media }];
      }),
    );
    const operation: OperationObject = {
      operationId: spec.operationId,
      summary: spec.summary,
      description: spec.description,
      tags: [spec.tag],
      security: securityOf(spec.path),
      parameters: [...pathParams, ...(spec.query === undefined ? [] : queryParameters(spec.query))],
      ...(bodyId === undefined ? {} : { requestBody: { required: true as const, content: { [json]: { schema: { $ref: `${SCHEMA_REF_PREFIX}${bodyId}` } } } } }),
      responses: { ...successes, ...errorResponses(errorCodesOf(spec)) },
    };
    const pathItem = (paths[spec.path] ??= {});
    if (pathItem[spec.method] !== undefined) throw new Error(`${spec.method.toUpperCase()} ${spec.path} is described twice`);
    pathItem[spec.method] = operation;
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "Foldline",
      version: "v1",
      description:
        "Conversation compaction with provenance for persistent chat agents: an immutable event log, and for each agent a " +
        "bounded context of one verified summary plus the exact recent tail. Every error is `{ error: { code, message, …details } }` " +
        "(the `Problem` schema) with one of a closed set of codes; a request that fails changes nothing.",
    },
    tags: TAGS,
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: { type: "http", scheme: "bearer", description: "An API token (`npm run token`), scoped to conversation patterns and `agent:<id>`." },
        telegramSecretToken: {
          type: "apiKey",
          in: "header",
          name: "X-Telegram-Bot-Api-Secret-Token",
          description: "The webhook's `secret_token`, equal to the Worker secret `TELEGRAM_WEBHOOK_SECRET_<botId>`.",
        },
      },
    },
  };
}

let built: OpenApiDocument | undefined;

/** The document, built on first use and kept for the isolate's life: it depends on code only, never on a request. */
export function openApiDocument(): OpenApiDocument {
  built ??= buildDocument();
  return built;
}
