import { z } from "zod";
import type { ChatRequest, TrustedDocument } from "../core/compose";
import { MAX_TEXT_CHARS } from "../core/events";
import type { ContextManifest } from "../core/context-manifest";

/**
 * What an external bot receives and what it must answer — pure, so the Worker, the tests and a
 * bot written in TypeScript share one definition.
 *
 * The request is the very body the built-in agent would send to its model (trusted documents as
 * the only system content, then the verified history ending with the message to answer), so a bot
 * can forward it to any OpenAI-compatible endpoint unchanged. The manifest is the context's private
 * provenance (boundary, amendments, tail, documents), for a bot that wants to log what it was shown.
 */

export const PAYLOAD_VERSION = 1;

export type BotManifest = ContextManifest & { readonly documents: readonly { readonly name: string; readonly hash: string; readonly chars: number }[] };

export interface BotPayload {
  readonly version: typeof PAYLOAD_VERSION;
  readonly conversationId: string;
  readonly agentId: string;
  /** The source message being answered: its sequence in the log and its message id. */
  readonly source: { readonly seq: number; readonly messageId: string };
  readonly request: ChatRequest;
  readonly manifest: BotManifest;
}

export interface PayloadInput {
  readonly conversationId: string;
  readonly agentId: string;
  readonly sourceSeq: number;
  readonly sourceMessageId: string;
  readonly request: ChatRequest;
  readonly manifest: ContextManifest;
  readonly documents: readonly TrustedDocument[];
}

/** The payload for one source message; documents enter the manifest by name, hash and size only. */
export function buildBotPayload(input: PayloadInput): BotPayload {
  return {
    version: PAYLOAD_VERSION,
    conversationId: input.conversationId,
    agentId: input.agentId,
    source: { seq: input.sourceSeq, messageId: input.sourceMessageId },
    request: input.request,
    manifest: { ...input.manifest, documents: input.documents.map((d) => ({ name: d.name, hash: d.hash, chars: d.content.length })) },
  };
}

/**
 * The bot's answer. It comes from outside Foldline's trust boundary, so it is validated like any
 * request body: unknown fields are tolerated (a bot may add its own), but the text must be a
 * non-empty, well-formed string no longer than any event text — it becomes a proposal verbatim.
 */
export const botAnswerSchema = z.object({
  text: z
    .string()
    .min(1)
    .max(MAX_TEXT_CHARS)
    .refine((s) => s.isWellFormed(), "unpaired surrogate")
    .refine((s) => s.trim() !== "", "blank"),
});
