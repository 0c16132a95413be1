import { z } from "zod";
import { incidentAlertSchema } from "./alerts";
import { TELEGRAM_BOT_ID } from "./conversation-id";

/**
 * The jobs the Worker runs off the request path: compactions, extractions and alerts on
 * `JOB_QUEUE`, and what a chat reads (replies, operator notices) on `REPLY_QUEUE`, so that a chat's
 * replies never wait behind a batch held by a slow compaction or alert receiver. One consumer runs
 * both, and validates each message against `jobSchema`.
 */

/** A compaction job names its packet; the packet, not the message, carries the input. */
export const compactionJobSchema = z.strictObject({
  type: z.literal("compaction"),
  conversationId: z.string().min(1).max(256),
  agentId: z.string().min(1).max(64),
  runId: z.string().regex(/^cmp_[0-9a-f-]{36}$/),
  packetKey: z.string().min(1).max(1_024),
  packetHash: z.string().regex(/^[0-9a-f]{64}$/),
  model: z.string().min(1).max(128),
  /** The declaration's provider profile (which endpoint and key). */
  profile: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/),
});
export type CompactionJob = z.infer<typeof compactionJobSchema>;

/**
 * Model attempts one plan may fail, whichever copy of its job made them (the watchdog sends its job
 * again, each copy with retries of its own): one job's deliveries, wrangler.toml's `max_retries` of
 * 5 and the first. Past them the plan is closed and its chain backs off, and no copy pays again.
 */
export const MAX_PLAN_ATTEMPTS = 6;

/**
 * An extraction job, queued once a compaction's boundary settled: the durable facts of that
 * boundary's frozen slice go into the agent's extracted memory pages, with the compactor's
 * provider profile and model (or the offline extractor).
 */
export const extractJobSchema = z.strictObject({
  type: z.literal("extract"),
  conversationId: z.string().min(1).max(256),
  agentId: z.string().min(1).max(64),
  compactorId: z.string().min(1).max(64),
  /** The compaction run whose boundary settled. */
  runId: z.string().regex(/^cmp_[0-9a-f-]{36}$/),
  boundaryId: z.string().min(1).max(128),
  model: z.string().min(1).max(128),
  profile: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/),
});
export type ExtractJob = z.infer<typeof extractJobSchema>;

/** A reply job: the built-in agent answers one admitted source message. */
export const replyJobSchema = z.strictObject({
  type: z.literal("reply"),
  conversationId: z.string().min(1).max(256),
  agentId: z.string().min(1).max(64),
  sourceSeq: z.number().int().positive(),
  sourceMessageId: z.string().min(1).max(128),
});
export type ReplyJob = z.infer<typeof replyJobSchema>;

/** A one-line incident summary for the operator's chat. */
export const noticeJobSchema = z.strictObject({
  type: z.literal("notice"),
  botId: z.string().regex(TELEGRAM_BOT_ID),
  chatId: z.number().int(),
  text: z.string().min(1).max(1_000),
});
export type NoticeJob = z.infer<typeof noticeJobSchema>;

/** A new incident for the operator's webhook (`core/alerts`): the alert as it was decided, rate limit included. */
export const alertJobSchema = z.strictObject({ type: z.literal("alert"), ...incidentAlertSchema.shape });
export type AlertJob = z.infer<typeof alertJobSchema>;

export const jobSchema = z.discriminatedUnion("type", [compactionJobSchema, extractJobSchema, replyJobSchema, noticeJobSchema, alertJobSchema]);
export type Job = z.infer<typeof jobSchema>;
