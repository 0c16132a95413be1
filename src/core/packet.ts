import { z } from "zod";
import { compactionPolicySchema } from "./declarations";
import type { Result } from "./errors";
import type { ConversationType } from "./events";
import { DEFAULT_CONVERSATION_TYPE, authorSchema, conversationTypeSchema } from "./events";

/**
 * The compaction packet: everything one compactor run may read, frozen as an immutable R2
 * document before the job is queued. Retries read the same packet, so a retried run sees
 * byte-identical input; the packet's SHA-256 travels in the job and is checked on load.
 */

export const PACKET_FORMAT = "foldline.compaction-packet@2";
/**
 * Packets written before slice lines named messages by their platform id and before the packet
 * carried its trusted documents' content. Still read, so their chains stay verifiable.
 */
export const LEGACY_PACKET_FORMAT = "foldline.compaction-packet@1";
export const OUTPUT_CONTRACT = "foldline.compaction-output@1";
export const BOUNDARY_EVENT_TYPE = "stream.thought.derived.conversation.compaction@1";

const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * A covered-history amendment: newer evidence about a turn a boundary already covers (an edit, a
 * deletion, a reply delivered late). Derived, bounded and typed; the frozen boundary is untouched.
 */
export const amendmentSchema = z.strictObject({
  turnId: z.string(),
  group: z.number().int().nonnegative(),
  role: z.enum(["user", "assistant"]),
  kind: z.enum(["edited", "deleted", "added"]),
  /** The turn's hash as the chain absorbed it; null for a turn the chain never saw. */
  hashBefore: sha256.nullable(),
  /** The turn's hash now; null for a deletion. */
  hashAfter: sha256.nullable(),
  /** The turn's text now; null for a deletion. */
  text: z.string().nullable(),
});
export type Amendment = z.infer<typeof amendmentSchema>;

export const memoryRefSchema = z.strictObject({ path: z.string().min(1).max(200), note: z.string().max(500) });

/** What the model contributed, after the parent validated it and wrapped it in the contract. */
export const compactionContentSchema = z.strictObject({
  contract: z.literal(OUTPUT_CONTRACT),
  mode: z.enum(["projection", "plain"]),
  summary: z.string().min(1),
  /** First line(s) of the summary, bounded; derived by the parent. */
  preview: z.string().max(280),
  salientFacts: z.strictObject({
    memoryRefs: z.array(memoryRefSchema),
    openThreads: z.array(z.string()),
    abandonedDirections: z.array(z.string()),
  }),
  /** True when durable facts had to be inlined because no recalled memory page matched. */
  degraded: z.boolean(),
  /**
   * References the model made to memory pages that do not exist, dropped by the parent with a note
   * rather than failing the run. Present only when there were any; never rendered for the agent.
   */
  droppedMemoryRefs: z.array(memoryRefSchema).min(1).optional(),
});
export type CompactionContent = z.infer<typeof compactionContentSchema>;

export const frozenTurnSchema = z.strictObject({
  /** The internal turn id (`s<seq>`, `p<seq>`): the packet's own mapping from slice line to log. */
  id: z.string(),
  /** The id the slice line shows: the message's id on its platform. Absent in legacy packets. */
  messageId: z.string().optional(),
  group: z.number().int().nonnegative(),
  role: z.enum(["user", "assistant"]),
  author: authorSchema,
  text: z.string(),
  hash: sha256,
  /** Exactly as the compactor's slice shows it. */
  rendered: z.string(),
  /** Characters of this turn as the agent's native message (what it stood for in the context). */
  nativeChars: z.number().int().nonnegative(),
});
/** One frozen turn of a packet. */
export type FrozenTurn = z.infer<typeof frozenTurnSchema>;

export const packetSchema = z.strictObject({
  format: z.enum([PACKET_FORMAT, LEGACY_PACKET_FORMAT]),
  conversationId: z.string(),
  /** From the platform (the frozen sources' own `conversationType`), never guessed from who spoke. */
  conversationType: conversationTypeSchema,
  agentId: z.string(),
  compactorId: z.string(),
  historyAgents: z.array(z.string()),
  admitSensitive: z.boolean(),
  epoch: z.strictObject({ id: z.string(), compactorVersion: z.string(), fingerprint: sha256 }),
  runId: z.string(),
  /** The source event whose preflight crossed the trigger. */
  triggerSeq: z.number().int().positive(),
  frontier: z.strictObject({ id: z.string(), hash: sha256, startSeq: z.number().int().nonnegative() }),
  policy: compactionPolicySchema,
  outputMode: z.enum(["projection", "plain"]),
  prompt: z.string(),
  promptHash: sha256,
  previousBoundary: z
    .strictObject({
      id: z.string(),
      hash: sha256,
      coveredThroughSeq: z.number().int().nonnegative(),
      /** The previous boundary's body exactly as the agent's envelope renders it. */
      body: z.string(),
    })
    .nullable(),
  /** Covered-history amendments pending against the previous boundary (absorbed by this run). */
  amendments: z.array(amendmentSchema),
  frozen: z.strictObject({
    turns: z.array(frozenTurnSchema).min(1),
    /** Sequence range of the source groups frozen by this run. */
    fromSeq: z.number().int().nonnegative(),
    throughSeq: z.number().int().positive(),
    /** Last turn id covered. */
    throughTurnId: z.string(),
    sourceCount: z.number().int().nonnegative(),
    eventCount: z.number().int().nonnegative(),
    chars: z.number().int().nonnegative(),
    turnIdsHash: sha256,
    renderedHash: sha256,
  }),
  memoryPages: z.array(z.strictObject({ path: z.string(), version: z.number().int().positive(), contentHash: sha256, content: z.string() })),
  /**
   * The agent's subscribed identity/memory documents, whole: the compactor reads them to interpret
   * names and obligations. Embedded rather than named, so a retry reads the same bytes without a
   * second lookup, and the packet's hash covers what the model was shown. Legacy packets name them only.
   */
  documents: z.array(z.strictObject({ name: z.string(), hash: sha256, content: z.string().optional() })),
  sizes: z.strictObject({
    /** Characters of the agent's active context when the trigger fired (boundary envelope included). */
    preCompactionChars: z.number().int().nonnegative(),
    /** Characters of the exact tail kept after this run's coverage. */
    retainedTailChars: z.number().int().nonnegative(),
    /** Characters this run's output replaces: the previous boundary's envelope plus the frozen turns. */
    replacedChars: z.number().int().nonnegative(),
  }),
  createdAt: z.string(),
});
export type Packet = z.infer<typeof packetSchema>;

/**
 * The slice's conversation type from what its sources say: `direct` only when every frozen source
 * came from a direct chat. A source that does not say counts as `DEFAULT_CONVERSATION_TYPE`.
 */
export function sliceConversationType(declared: readonly (ConversationType | undefined)[]): ConversationType {
  return declared.length > 0 && declared.every((type) => (type ?? DEFAULT_CONVERSATION_TYPE) === "direct") ? "direct" : "group";
}

/** A subscribed document as every reader gets it: whole, under the name and hash it was registered with. */
export interface TrustedDocument {
  readonly name: string;
  readonly hash: string;
  readonly content: string;
}

export interface DocumentBudgetExceeded {
  readonly code: "document_budget_exceeded";
  readonly message: string;
}

/**
 * The characters of the document budget left for recalled memory pages once the subscribed
 * documents are charged exactly as they will be sent (their content), or a failure when the
 * documents alone do not fit: a compactor never reads a cut document.
 */
export function pageBudget(documents: readonly TrustedDocument[], budgetChars: number): Result<number, DocumentBudgetExceeded> {
  const chars = documents.reduce((total, d) => total + d.content.length, 0);
  if (chars > budgetChars) return { ok: false, error: { code: "document_budget_exceeded", message: `the subscribed documents need ${chars} characters; the budget is ${budgetChars}` } };
  return { ok: true, value: budgetChars - chars };
}
