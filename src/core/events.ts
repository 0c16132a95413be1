import { z } from "zod";
import { hashCanonical } from "./hash";
import { hasUnsafeChars, safeIdString, UNSAFE_MESSAGE } from "./names";
import { typedIssue } from "./errors";

/**
 * The five immutable event kinds and their bodies. These schemas are the single source of every
 * event shape: ingest validates with them, storage re-validates what it reads, and the TypeScript
 * types below are inferred from them.
 */

/** Longest text one event may carry (JavaScript string length). A Telegram message is ≤ 4,096. */
export const MAX_TEXT_CHARS = 200_000;
/** Most events one batch request may append (one D1 transaction). */
export const MAX_BATCH_EVENTS = 100;

const isoTime = z.iso.datetime({ offset: true });
const printable = /^[\x21-\x7e]+$/;

export const idempotencyKeySchema = safeIdString()
  .min(1)
  .max(200)
  .regex(printable, "printable ASCII without spaces");
export const agentIdSchema = safeIdString().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "1–64 letters, digits, . _ - (starting with a letter or digit)");
const messageIdSchema = safeIdString().min(1).max(128).regex(printable, "printable ASCII without spaces");
const textSchema = z.string().max(MAX_TEXT_CHARS);

export const authorSchema = z.strictObject({
  id: z.string().min(1).max(128),
  name: z.string().max(256).optional(),
  username: z.string().max(64).optional(),
});

export const attachmentSchema = z.strictObject({
  type: z.enum([
    "photo",
    "video",
    "video_note",
    "animation",
    "audio",
    "voice",
    "document",
    "sticker",
    "location",
    "venue",
    "contact",
    "poll",
    "dice",
    "other",
  ]),
  fileId: z.string().max(256).optional(),
  fileUniqueId: z.string().max(128).optional(),
});

export const conversationTypeSchema = z.enum(["direct", "group"]);
export type ConversationType = z.infer<typeof conversationTypeSchema>;
/** What a source that does not name its chat's type counts as: nobody is bound as its sole sender. */
export const DEFAULT_CONVERSATION_TYPE: ConversationType = "group";

export const sourceBodySchema = z.strictObject({
  /** The message's id in its chat (Telegram `message_id`, or the bot's own id); corrections target it. */
  messageId: messageIdSchema,
  author: authorSchema,
  text: textSchema,
  sentAt: isoTime.optional(),
  replyToMessageId: messageIdSchema.optional(),
  attachments: z.array(attachmentSchema).max(20).optional(),
  /**
   * The kind of chat, as the platform says (Telegram's `chat.type`: `private` is `direct`; `group`,
   * `supergroup` and `channel` are `group`). API clients say it themselves; a source that does not
   * counts as `group` (`DEFAULT_CONVERSATION_TYPE`), which binds no sender to a boundary.
   */
  conversationType: conversationTypeSchema.optional(),
});

export const correctionBodySchema = z.discriminatedUnion("action", [
  z.strictObject({
    action: z.literal("edit"),
    targetMessageId: messageIdSchema,
    text: textSchema,
    editedAt: isoTime.optional(),
  }),
  z.strictObject({
    action: z.literal("delete"),
    targetMessageId: messageIdSchema,
    deletedAt: isoTime.optional(),
  }),
]);

export const proposalBodySchema = z.strictObject({
  proposalId: messageIdSchema,
  agentId: agentIdSchema,
  runId: messageIdSchema.optional(),
  /** The source message this reply answers; it places the reply in that message's group. */
  replyToMessageId: messageIdSchema.optional(),
  text: textSchema,
});

export const deliveryBodySchema = z.discriminatedUnion("status", [
  z.strictObject({
    status: z.literal("delivered"),
    proposalId: messageIdSchema,
    externalMessageId: messageIdSchema.optional(),
    at: isoTime.optional(),
  }),
  z.strictObject({
    status: z.literal("failed"),
    proposalId: messageIdSchema,
    reason: z.string().min(1).max(1_000),
    at: isoTime.optional(),
    /**
     * A text split into several messages that failed part-way: the external ids of the parts
     * already in the chat, in order, so a retry continues after them instead of sending them again.
     */
    sentMessageIds: z.array(messageIdSchema).min(1).max(256).optional(),
  }),
]);

/**
 * What a completed compactor run settled, bound into the append-only log: the boundary's identity
 * and place in its epoch's chain, its hash, and the hash of its model-supplied content. Boundary
 * rows are a table an operator can edit; the log cannot be edited, so the newest anchor of an
 * epoch says which boundary must be the chain's head, and each anchor what its boundary must be.
 */
export const chainAnchorSchema = z.strictObject({
  epochId: z.string().min(1).max(256),
  position: z.number().int().positive(),
  boundaryId: z.string().min(1).max(128),
  boundaryHash: z.string().regex(/^[0-9a-f]{64}$/),
  /** `hashCanonical(content)`: the summary and facts the model supplied, as stored in the boundary. */
  contentHash: z.string().regex(/^[0-9a-f]{64}$/),
});
export type ChainAnchor = z.infer<typeof chainAnchorSchema>;

export const runBodySchema = z.strictObject({
  runId: messageIdSchema,
  agentId: agentIdSchema,
  role: z.enum(["agent", "compactor"]),
  status: z.enum(["planned", "skipped", "started", "completed", "failed"]),
  model: z.string().max(256).optional(),
  usage: z
    .strictObject({
      inputTokens: z.number().int().nonnegative(),
      outputTokens: z.number().int().nonnegative(),
    })
    .optional(),
  error: z.strictObject({ code: z.string().min(1).max(64), message: z.string().max(1_000) }).optional(),
  /** Content-dark counters and labels only: numbers, booleans and short strings. */
  detail: z.record(z.string().max(64), z.union([z.string().max(256), z.number(), z.boolean(), z.null()])).optional(),
  anchor: chainAnchorSchema.optional(),
}).refine((body) => body.anchor === undefined || (body.role === "compactor" && body.status === "completed"), {
  message: "only a completed compactor run anchors a boundary",
  path: ["anchor"],
});

const seqSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/**
 * Every string of an event must be well-formed UTF-16: an unpaired surrogate has no canonical JSON
 * form (RFC 8785 §3.2.2.2), so it could be neither hashed nor compared, and is refused up front.
 */
function refuseUnpairedSurrogates(value: unknown, ctx: z.RefinementCtx, path: PropertyKey[] = []): void {
  if (typeof value === "string") {
    if (!value.isWellFormed()) ctx.addIssue({ code: "custom", path, message: "contains an unpaired UTF-16 surrogate" });
  } else if (Array.isArray(value)) {
    value.forEach((item: unknown, i) => refuseUnpairedSurrogates(item, ctx, [...path, i]));
  } else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) refuseUnpairedSurrogates(item, ctx, [...path, key]);
  }
}

/** The five event kinds, each with its body schema, over one envelope (an input's, or a stored event's). */
export function eventKinds<Envelope extends Record<string, z.ZodType>>(envelope: Envelope) {
  return z.discriminatedUnion("kind", [
    z.strictObject({ kind: z.literal("source"), ...envelope, body: sourceBodySchema }),
    z.strictObject({ kind: z.literal("run"), ...envelope, body: runBodySchema }),
    z.strictObject({ kind: z.literal("proposal"), ...envelope, body: proposalBodySchema }),
    z.strictObject({ kind: z.literal("delivery"), ...envelope, body: deliveryBodySchema }),
    z.strictObject({ kind: z.literal("correction"), ...envelope, body: correctionBodySchema }),
  ]);
}

function eventUnion<Extra extends Record<string, z.ZodType>>(extra: Extra) {
  return eventKinds({ idempotencyKey: idempotencyKeySchema, sensitive: z.boolean().default(false), ...extra }).superRefine((event, ctx) => refuseUnpairedSurrogates(event, ctx));
}

/**
 * The free-form ids of an event a client sends (author id and username, attachment file ids, a
 * run's model and error code): refused when they hold an unsafe character. Checked on requests
 * only, not in the stored shape, so an event stored before the rule still reads back.
 */
function refuseUnsafeIds(event: EventInput, ctx: z.RefinementCtx): void {
  const ids: [PropertyKey[], string | undefined][] = [];
  if (event.kind === "source") {
    ids.push([["body", "author", "id"], event.body.author.id], [["body", "author", "username"], event.body.author.username]);
    event.body.attachments?.forEach((a, i) => ids.push([["body", "attachments", i, "fileId"], a.fileId], [["body", "attachments", i, "fileUniqueId"], a.fileUniqueId]));
  }
  if (event.kind === "run") ids.push([["body", "model"], event.body.model], [["body", "error", "code"], event.body.error?.code]);
  for (const [path, value] of ids) {
    if (value !== undefined && hasUnsafeChars(value)) ctx.addIssue({ code: "custom", path, message: UNSAFE_MESSAGE, ...typedIssue("unsafe_characters") });
  }
}

/** An event as it enters the log. */
export const eventInputSchema = eventUnion({});

/** An event as a client sends it: an input whose free-form ids are safe to render. */
const eventRequestSchema = eventInputSchema.superRefine(refuseUnsafeIds);

/**
 * `POST …/events`: one event, optionally with `expectedSeq`, the sequence the client believes is
 * the conversation's latest (optimistic concurrency; 0 for an empty conversation).
 */
export const appendEventRequestSchema = eventUnion({ expectedSeq: seqSchema.optional() }).superRefine(refuseUnsafeIds);

/** `POST …/events/batch`: up to MAX_BATCH_EVENTS events, appended all or none, in order. */
export const appendBatchRequestSchema = z.strictObject({
  events: z.array(eventRequestSchema).min(1).max(MAX_BATCH_EVENTS),
  expectedSeq: seqSchema.optional(),
});

export type EventInput = z.infer<typeof eventInputSchema>;
export type RunBody = z.infer<typeof runBodySchema>;
export type Author = z.infer<typeof authorSchema>;

/** An event as the log holds it: its input plus what the log assigned. */
export type StoredEvent = EventInput & {
  readonly conversationId: string;
  readonly seq: number;
  readonly hash: string;
  readonly recordedAt: string;
};

/**
 * The event's content hash: SHA-256 over the canonical envelope. It binds the conversation so an
 * event cannot be replayed into another one, and excludes `seq`/`recordedAt`, which the log
 * assigns, so a retried append hashes the same and idempotency can compare payloads by hash.
 */
export function eventHash(conversationId: string, event: EventInput): string {
  return hashCanonical({
    conversationId,
    kind: event.kind,
    idempotencyKey: event.idempotencyKey,
    sensitive: event.sensitive,
    body: event.body,
  });
}

/**
 * What only Foldline itself may write: compactor runs (their receipts are evidence the resolver
 * trusts) and the idempotency namespaces of its own writers (`run:` for run bookkeeping, `tg:` for
 * Telegram updates, `reply:` for the built-in agent, `dispatch:` for delivery evidence). A client event claiming either would forge evidence or pre-empt a key.
 */
export function reservedForFoldline(event: EventInput): string | undefined {
  if (event.kind === "run" && event.body.role === "compactor") return "compactor runs are recorded by Foldline only";
  if (/^(run|tg|reply|dispatch):/.test(event.idempotencyKey)) return "idempotency keys starting with run:, tg:, reply: or dispatch: are reserved";
  return undefined;
}
