import { DEFAULT_PROFILE, extractionUsesModel, openAiApiKey, structuredOutput } from "../config";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import type { ExtractedFact, SliceTurn } from "../core/fact-extraction";
import { extractFacts } from "../core/fact-extraction";
import type { ExtractorOutputCode } from "../core/extractor-io";
import { EXTRACTOR_JSON_SCHEMA, extractorMessages, validateExtractorOutput } from "../core/extractor-io";
import type { Packet } from "../core/packet";
import type { JsonSchemaResponseFormat, ModelFailureKind } from "./compactor-model";
import { chatCompletion } from "./compactor-model";

/**
 * The memory extractor's model call: the compactor declaration's provider profile and model,
 * through the same SDK path (`chatCompletion`), held to the facts' JSON schema where the profile
 * supports structured output. Without a key on the default profile, or with extraction set to
 * `offline` for the profile, the deterministic extractor runs instead and the receipt says so.
 */

export const OFFLINE_EXTRACTOR = { provider: "foldline-extractive", model: "foldline-fact-extractor-1" } as const;

export interface ExtractionReceipt {
  readonly provider: string;
  readonly model: string;
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number } | null;
  readonly facts: readonly ExtractedFact[];
}

export interface ExtractionFailure {
  /** `model_<kind>` for the endpoint's failures, `output_<code>` for a reply that cannot be used. */
  readonly code: `model_${ModelFailureKind}` | `output_${ExtractorOutputCode}`;
  readonly message: string;
  readonly retryAfterSeconds: number | null;
}

const FACTS_RESPONSE_FORMAT: JsonSchemaResponseFormat = {
  type: "json_schema",
  json_schema: { name: "extracted_facts", strict: true, schema: EXTRACTOR_JSON_SCHEMA },
};

/** Room for a slice's facts: a few hundred one-line statements at most. */
const MAX_EXTRACTION_TOKENS = 8_192;

/** `turns` are the packet's frozen turns bound to their log events (`sliceTurns`): what a fact may cite. */
export async function runExtractor(env: Env, packet: Packet, turns: readonly SliceTurn[], model: string, profile: string = DEFAULT_PROFILE): Promise<Result<ExtractionReceipt, ExtractionFailure>> {
  const offline = (openAiApiKey(env, profile) === undefined && profile === DEFAULT_PROFILE) || !extractionUsesModel(env, profile);
  if (offline) return ok({ ...OFFLINE_EXTRACTOR, usage: null, facts: extractFacts(turns) });
  const receipt = await chatCompletion(env, profile, {
    model,
    messages: extractorMessages(packet),
    maxCompletionTokens: MAX_EXTRACTION_TOKENS,
    ...(structuredOutput(env, profile) ? { responseFormat: FACTS_RESPONSE_FORMAT } : {}),
  });
  if (!receipt.ok) return { ok: false, error: { code: `model_${receipt.error.kind}`, message: receipt.error.message, retryAfterSeconds: receipt.error.retryAfterSeconds } };
  const facts = validateExtractorOutput(turns, receipt.value.text);
  if (!facts.ok) return { ok: false, error: { code: `output_${facts.error.code}`, message: facts.error.message, retryAfterSeconds: null } };
  return ok({ provider: receipt.value.provider, model: receipt.value.model, usage: receipt.value.usage, facts: facts.value });
}
