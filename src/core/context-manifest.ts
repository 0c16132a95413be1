import { z } from "zod";
import { amendmentsHash } from "./amendments";
import type { BoundaryBody } from "./boundary";
import { modelEvidenceSchema } from "./boundary";
import { conversationIdSchema } from "./conversation-id";
import { contextPolicySchema, sha256Schema } from "./declarations";
import { agentIdSchema } from "./events";
import { hashCanonical } from "./hash";
import type { Amendment } from "./packet";
import { amendmentSchema } from "./packet";
import type { MemoryManifest } from "./recall";
import { memoryManifestSchema } from "./recall";
import type { NativeMessage } from "./render";
import type { Selection } from "./selection";

/**
 * The private manifest of a served context: which verified boundary, which amendments and which
 * exact turns the messages hold, with their sizes against the agent's policy. It travels beside
 * the messages, never inside the text the model reads. The schema is the one shape: the type is
 * inferred from it, and the HTTP document describes responses with it.
 */

const seq = z.number().int().nonnegative();
const count = z.number().int().nonnegative();
/** Ids the service derives (boundary, run, epoch, turn ids) and promises no pattern for. */
const id = z.string().min(1);

export const contextManifestSchema = z.strictObject({
  conversationId: conversationIdSchema,
  agentId: agentIdSchema,
  epochId: id,
  /** The verified head boundary served; null when there is none, or it is withheld. */
  boundary: z
    .strictObject({
      id,
      hash: sha256Schema,
      position: z.number().int().positive(),
      coveredThroughSeq: seq,
      coveredThroughTurnId: id,
      runId: id,
      model: modelEvidenceSchema.pick({ provider: true, model: true }),
      envelopeChars: count,
    })
    .nullable(),
  /** The covered-history amendment envelope served; null when nothing covered has changed. */
  amendment: z
    .strictObject({
      hash: sha256Schema,
      envelopeChars: count,
      items: z.array(amendmentSchema.pick({ turnId: true, group: true, kind: true, hashBefore: true, hashAfter: true })),
      content: z.string(),
    })
    .nullable(),
  /** Why a boundary and its amendments were withheld (the agent does not admit sensitive content). */
  withheld: z.string().nullable(),
  tail: z.strictObject({
    turns: count,
    chars: count,
    firstTurnId: id.nullable(),
    lastTurnId: id.nullable(),
    turnIdsHash: sha256Schema,
  }),
  omitted: z.strictObject({ groups: count, chars: count, throughGroup: seq.nullable() }),
  reserved: z.strictObject({ chars: count, messages: count }),
  totals: z.strictObject({ chars: count, messages: count }),
  policy: contextPolicySchema,
  /** The recalled-memory envelope of a call with a query (absent without one): pages and turns served. */
  memory: memoryManifestSchema.optional(),
  /**
   * Present when the exact history served does not reach back to the log's start although caps
   * left room: the log through `throughSeq` was not read for this context (an agent that does not
   * admit sensitive content is served admitted turns read back a bounded stretch of the log).
   */
  unread: z.strictObject({ throughSeq: seq }).optional(),
});

export type ContextManifest = z.infer<typeof contextManifestSchema>;

/** A served context: provider-ready messages and their private provenance. */
export interface ContextSelection {
  readonly messages: NativeMessage[];
  readonly manifest: ContextManifest;
}

export const WITHHELD_NOTE = "boundary and amendments withheld: the agent does not admit sensitive content";

/** The head boundary as the chain stores it: what the manifest names of it. */
export interface ServedBoundary {
  readonly body: BoundaryBody;
  readonly hash: string;
  readonly position: number;
  readonly coveredThroughSeq: number;
  readonly runId: string;
}

export interface ManifestInput {
  readonly conversationId: string;
  readonly agentId: string;
  readonly epochId: string;
  /** The boundary served and its rendered envelope; absent when there is none or it is withheld. */
  readonly boundary: { readonly head: ServedBoundary; readonly envelope: NativeMessage } | undefined;
  /** The amendments served and their envelope; absent when nothing covered has changed. */
  readonly amendment: { readonly items: readonly Amendment[]; readonly envelope: NativeMessage } | undefined;
  /** A boundary exists but the agent does not admit sensitive content, so it was not served. */
  readonly withheld: boolean;
  readonly selection: Selection;
  /** What a call with a query recalled; absent without a query. */
  readonly memory?: MemoryManifest | undefined;
  readonly policy: ContextManifest["policy"];
  /** The newest sequence number of the log not read for the exact history served; undefined: none left unread. */
  readonly unreadThroughSeq?: number | undefined;
}

export function buildContextManifest(input: ManifestInput): ContextManifest {
  const { boundary, amendment, selection } = input;
  const tailTurns = selection.tail.groups.flatMap((g) => g.turns);
  return {
    conversationId: input.conversationId,
    agentId: input.agentId,
    epochId: input.epochId,
    boundary:
      boundary === undefined
        ? null
        : {
            id: boundary.head.body.id,
            hash: boundary.head.hash,
            position: boundary.head.position,
            coveredThroughSeq: boundary.head.coveredThroughSeq,
            coveredThroughTurnId: boundary.head.body.coveredThrough.turnId,
            runId: boundary.head.runId,
            model: { provider: boundary.head.body.model.provider, model: boundary.head.body.model.model },
            envelopeChars: boundary.envelope.content.length,
          },
    amendment:
      amendment === undefined
        ? null
        : {
            hash: amendmentsHash(amendment.items),
            envelopeChars: amendment.envelope.content.length,
            items: amendment.items.map((a) => ({ turnId: a.turnId, group: a.group, kind: a.kind, hashBefore: a.hashBefore, hashAfter: a.hashAfter })),
            content: amendment.envelope.content,
          },
    withheld: input.withheld ? WITHHELD_NOTE : null,
    tail: {
      turns: tailTurns.length,
      chars: selection.tail.chars,
      firstTurnId: tailTurns[0]?.id ?? null,
      lastTurnId: tailTurns.at(-1)?.id ?? null,
      turnIdsHash: hashCanonical(tailTurns.map((t) => t.id)),
    },
    omitted: selection.omitted,
    reserved: { chars: selection.reservedChars, messages: selection.reservedMessages },
    totals: { chars: selection.totalChars, messages: selection.messages.length },
    policy: input.policy,
    ...(input.memory === undefined ? {} : { memory: input.memory }),
    ...(input.unreadThroughSeq === undefined ? {} : { unread: { throughSeq: input.unreadThroughSeq } }),
  };
}
