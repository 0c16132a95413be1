import { z } from "zod";
import { conversationChat } from "./conversation-id";
import { hashCanonical } from "./hash";
import type { CompactionContent, Packet } from "./packet";
import { BOUNDARY_EVENT_TYPE, OUTPUT_CONTRACT, compactionContentSchema } from "./packet";

/**
 * The boundary event `stream.thought.derived.conversation.compaction@1`. The model supplied only
 * `content`; the trusted parent binds every other field from the plan it froze (the packet) and
 * the run's receipt, then hashes the whole. A boundary is always sensitive: a derived claim about
 * the conversation by a named model execution, never a replacement event or a source message.
 */

const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

export const modelEvidenceSchema = z.strictObject({
  /** `openai-compatible` for a language model, `foldline-extractive` for the offline compactor. */
  provider: z.string(),
  /** The model the provider says answered (not only the one requested). */
  model: z.string(),
  responseId: z.string().nullable(),
  finishReason: z.string().nullable(),
  /** The tokens the provider reported; null when it reported none (the offline compactor, and OpenAI-compatible servers that omit `usage`): unknown, not zero. */
  usage: z.strictObject({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() }).nullable(),
  latencyMs: z.number().nonnegative(),
});
export type ModelEvidence = z.infer<typeof modelEvidenceSchema>;

export const boundaryBodySchema = z.strictObject({
  type: z.literal(BOUNDARY_EVENT_TYPE),
  sensitive: z.literal(true),
  id: z.string(),
  position: z.number().int().positive(),
  targetAgentId: z.string(),
  compactorId: z.string(),
  historyAgents: z.array(z.string()),
  admitSensitive: z.boolean(),
  conversation: z.strictObject({ id: z.string(), source: z.enum(["telegram", "api"]), chat: z.string(), sender: z.string().nullable() }),
  previous: z.strictObject({ id: z.string(), hash: sha256, coveredThroughSeq: z.number().int() }).nullable(),
  frontier: z.strictObject({ id: z.string(), hash: sha256, startSeq: z.number().int() }),
  coveredThrough: z.strictObject({ turnId: z.string(), seq: z.number().int().positive() }),
  policy: z.strictObject({ triggerInputChars: z.number().int(), retainInputChars: z.number().int() }),
  sizes: z.strictObject({
    preCompactionChars: z.number().int(),
    retainedTailChars: z.number().int(),
    coveredSourceCount: z.number().int(),
  }),
  input: z.strictObject({
    turnCount: z.number().int().positive(),
    eventCount: z.number().int().nonnegative(),
    chars: z.number().int(),
    turnIdsHash: sha256,
    renderedHash: sha256,
    amendmentsHash: sha256,
  }),
  compactor: z.strictObject({ version: z.string(), fingerprint: sha256, epochId: z.string(), promptHash: sha256, outputMode: z.enum(["projection", "plain"]) }),
  packet: z.strictObject({ key: z.string(), hash: sha256 }),
  outputContract: z.literal(OUTPUT_CONTRACT),
  run: z.strictObject({ id: z.string(), triggerSeq: z.number().int().positive() }),
  model: modelEvidenceSchema,
  content: compactionContentSchema,
  createdAt: z.string(),
});
export type BoundaryBody = z.infer<typeof boundaryBodySchema>;

export interface Boundary {
  readonly body: BoundaryBody;
  readonly hash: string;
}

export const boundaryHash = (body: BoundaryBody): string => hashCanonical(body);

/**
 * The conversation's source and chat (`conversationChat`). A sender is bound only for a direct
 * chat (as its platform said, `packet.conversationType`) whose slice has exactly one human author;
 * a group has no single sender, even when one person spoke.
 */
function conversationParts(packet: Packet): BoundaryBody["conversation"] {
  const id = packet.conversationId;
  const authors = new Set(packet.frozen.turns.filter((t) => t.role === "user").map((t) => t.author.id));
  const [only] = authors;
  const sender = packet.conversationType === "direct" && authors.size === 1 && only !== undefined ? only : null;
  const { source, chat } = conversationChat(id);
  return { id, source, chat, sender };
}

export interface BoundaryInputs {
  readonly id: string;
  readonly position: number;
  readonly packet: Packet;
  readonly packetKey: string;
  readonly packetHash: string;
  readonly content: CompactionContent;
  readonly model: ModelEvidence;
  readonly createdAt: string;
}

export function buildBoundary({ id, position, packet, packetKey, packetHash, content, model, createdAt }: BoundaryInputs): Boundary {
  const body: BoundaryBody = {
    type: BOUNDARY_EVENT_TYPE,
    sensitive: true,
    id,
    position,
    targetAgentId: packet.agentId,
    compactorId: packet.compactorId,
    historyAgents: [...packet.historyAgents].sort(),
    admitSensitive: packet.admitSensitive,
    conversation: conversationParts(packet),
    previous:
      packet.previousBoundary === null
        ? null
        : { id: packet.previousBoundary.id, hash: packet.previousBoundary.hash, coveredThroughSeq: packet.previousBoundary.coveredThroughSeq },
    frontier: packet.frontier,
    coveredThrough: { turnId: packet.frozen.throughTurnId, seq: packet.frozen.throughSeq },
    policy: { triggerInputChars: packet.policy.triggerInputChars, retainInputChars: packet.policy.retainInputChars },
    sizes: {
      preCompactionChars: packet.sizes.preCompactionChars,
      retainedTailChars: packet.sizes.retainedTailChars,
      coveredSourceCount: packet.frozen.sourceCount,
    },
    input: {
      turnCount: packet.frozen.turns.length,
      eventCount: packet.frozen.eventCount,
      chars: packet.frozen.chars,
      turnIdsHash: packet.frozen.turnIdsHash,
      renderedHash: packet.frozen.renderedHash,
      amendmentsHash: hashCanonical(packet.amendments),
    },
    compactor: {
      version: packet.epoch.compactorVersion,
      fingerprint: packet.epoch.fingerprint,
      epochId: packet.epoch.id,
      promptHash: packet.promptHash,
      outputMode: packet.outputMode,
    },
    packet: { key: packetKey, hash: packetHash },
    outputContract: OUTPUT_CONTRACT,
    run: { id: packet.runId, triggerSeq: packet.triggerSeq },
    model,
    content,
    createdAt,
  };
  return { body, hash: boundaryHash(body) };
}
