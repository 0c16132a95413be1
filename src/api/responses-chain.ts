import { z } from "zod";
import { CHECK_NAMES } from "../core/chain-audit";
import { conversationIdSchema } from "../core/conversation-id";
import { agentIdSchema } from "../core/events";
import { INCIDENT_KINDS } from "../storage/shard/incidents";
import { id, modelNames, position, seq } from "./response-fields";

/**
 * The JSON success bodies of the chain routes (`…/chain`, `…/verify`, `…/verify/links`), as
 * schemas, under the same rules as `responses.ts`: strict, describing and never parsing.
 */

/**
 * A boundary as `listChain` lists it. Identity, order and links are the stored columns as they are,
 * so a row whose body is not a boundary still lists (with null `coveredThroughTurnId`, `model` and
 * `preview`); judging the row is `verifyChain`'s work, hence plain strings for its hashes and times.
 */
export const listedBoundarySchema = z.strictObject({
  id,
  epochId: id,
  position,
  previous: z.strictObject({ id, hash: z.string().nullable() }).nullable(),
  coveredThroughSeq: seq,
  coveredThroughTurnId: id.nullable(),
  runId: id,
  hash: z.string(),
  createdAt: z.string(),
  model: modelNames.nullable(),
  /** The bounded preview the contract derives for listings; never the summary. */
  preview: z.string().nullable(),
  /** Whether the boundary belongs to the agent's current epoch. */
  current: z.boolean(),
});

/**
 * Whether the chain is moving, for the operator who is paged: the plan in flight (how old, how
 * often its job was sent, how many attempts failed, when its watchdog fires next), the backoff
 * after a dead-letter, whether it fell behind its log, and the newest compaction failure of any kind. Null when the agent does not
 * serve the conversation.
 */
export const chainHealthSchema = z.strictObject({
  /** False until the epoch's first eligible source turn in this conversation. */
  activated: z.boolean(),
  headId: id.nullable(),
  openPlan: z
    .strictObject({
      runId: id,
      createdAt: z.string(),
      ageSeconds: z.number().int().nonnegative(),
      /** How many times the plan's job was sent (1 at planning, one more per watchdog firing). */
      dispatches: z.number().int().nonnegative(),
      failedAttempts: z.number().int().nonnegative(),
      /** When the watchdog re-sends the job if no boundary arrives first. */
      nextWakeAt: z.string().nullable(),
    })
    .nullable(),
  /** When a chain backing off after a dead-letter plans again. */
  replanAt: z.string().nullable(),
  /**
   * Set while the chain's compactions are so far behind that its object holds only the oldest part
   * of its uncovered history (`HOT_WINDOW_EVENTS`): the last sequence number it holds. Its context
   * answers `compaction_behind` meanwhile.
   */
  behindThroughSeq: z.number().int().nonnegative().nullable(),
  lastFailure: z
    .strictObject({ kind: z.enum(INCIDENT_KINDS), code: z.string(), message: z.string(), runId: id.nullable(), createdAt: z.string() })
    .nullable(),
});

export const chainListingSchema = z.strictObject({
  conversationId: conversationIdSchema,
  agentId: agentIdSchema,
  currentEpochId: id,
  /** A page of the boundaries, oldest first (`limit`, 100 unless asked). */
  boundaries: z.array(listedBoundarySchema),
  /** The id to pass as `after` for the next page; null after the last boundary. */
  nextAfter: id.nullable(),
  health: chainHealthSchema.nullable(),
});

/** One check of one link (`core/chain-audit`); `detail` only when it failed. */
export const auditCheckSchema = z.strictObject({
  name: z.enum(CHECK_NAMES),
  ok: z.boolean(),
  detail: z.string().optional(),
});

export const linkAuditSchema = z.strictObject({
  boundaryId: id,
  position,
  epochId: id,
  current: z.boolean(),
  valid: z.boolean(),
  checks: z.array(auditCheckSchema),
});

/** The epoch's newest row against the log's newest anchor of the epoch (`core/chain-audit`); `detail` only when it failed. */
export const anchorAuditSchema = z.strictObject({
  ok: z.boolean(),
  /** The boundary the log says is the head, and its position; null while nothing is anchored. */
  boundaryId: id.nullable(),
  position: position.nullable(),
  detail: z.string().optional(),
});

export const epochAuditSchema = z.strictObject({
  epochId: id,
  current: z.boolean(),
  /** Every link passes every check and the head is the one the log anchors. */
  valid: z.boolean(),
  anchor: anchorAuditSchema,
  links: z.array(linkAuditSchema),
});

/** The log as a whole (`core/log-audit`): sequence numbers with no event, and events that no longer hash to their stored hash. */
export const logAuditSchema = z.strictObject({
  ok: z.boolean(),
  /** The sequence number of the newest event ever stored in the conversation. */
  lastSeq: z.number().int().nonnegative(),
  /** Sequence numbers at or below `lastSeq` with no event (an event that was stored and is gone), oldest first, at most 100. */
  missing: z.array(position),
  /** Events whose stored hash their content no longer matches, at most 100 (a page checks the events it read). */
  altered: z.array(position),
});

export const chainAuditSchema = z.strictObject({
  conversationId: conversationIdSchema,
  agentId: agentIdSchema,
  currentEpochId: id,
  /** Every link of every epoch passes every check, and the log is intact. */
  valid: z.boolean(),
  /** The current epoch first (listed even with no boundary yet), then retired ones, newest first. */
  epochs: z.array(epochAuditSchema),
  log: logAuditSchema,
});

/** A page of one epoch's audited links (`verifyLinks`). */
export const linkPageSchema = z.strictObject({
  conversationId: conversationIdSchema,
  agentId: agentIdSchema,
  currentEpochId: id,
  epochId: id,
  current: z.boolean(),
  /** Every link of this page passes every check, the epoch's head is the one the log anchors, and the log is intact. */
  valid: z.boolean(),
  anchor: anchorAuditSchema,
  links: z.array(linkAuditSchema),
  /** The position to pass as `after` for the next page; null after the epoch's last link. */
  nextAfter: position.nullable(),
  /** The audit of this page's part of the log (`range`): an epoch's pages together cover the whole log, each sequence number once. */
  log: logAuditSchema.extend({
    range: z.strictObject({
      /** The first sequence number this page answers for: 1 on an epoch's first page, else just past the coverage of the link before the page. */
      fromSeq: position,
      /** The last one: the coverage of the page's last link, or the high-water mark on the epoch's last page (below `fromSeq`: an empty range). */
      throughSeq: z.number().int().nonnegative(),
    }),
  }),
});
