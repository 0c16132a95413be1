import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, OpenAIError } from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { z } from "zod";
import { DEFAULT_PROFILE, modelMaxRetries, modelTimeoutMs, openAiApiKey, openAiBaseUrl, structuredOutput } from "../config";
import type { RepairTurn } from "../core/compactor-input";
import { compactorMessages, repairMessages } from "../core/compactor-input";
import { PROJECTION_JSON_SCHEMA } from "../core/compactor-output";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import { OFFLINE_COMPACTOR, offlineCompaction } from "../core/offline-summarizer";
import type { Packet } from "../core/packet";
import type { NativeMessage } from "../core/render";

/**
 * The compactor's model call: an adapter with no business rules. It sends the packet's messages to
 * an OpenAI-compatible endpoint and returns what came back as evidence (a receipt), or a typed
 * failure the caller can decide to retry. Whether the text is a usable summary is
 * `validateCompactorOutput`'s decision, not this module's.
 *
 * Without an `OPENAI_API_KEY` secret it runs Foldline's offline extractive summarizer instead, and
 * the receipt says so: provider `foldline-extractive`, no usage, no response id.
 */

export interface ModelReceipt {
  readonly provider: "openai-compatible" | "foldline-extractive" | "foldline-offline-reply";
  /** The model that produced the text, as the provider reported it (the requested one if it did not say). */
  readonly model: string;
  readonly responseId: string | null;
  readonly finishReason: string | null;
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number } | null;
  readonly latencyMs: number;
  readonly text: string;
}

export type ModelFailureKind = "rate_limited" | "server_error" | "timeout" | "network" | "rejected";

export interface ModelFailure {
  readonly kind: ModelFailureKind;
  readonly status: number | null;
  readonly message: string;
  readonly retryAfterSeconds: number | null;
}

/** Error text is evidence, kept bounded: a provider may echo a whole request body back. */
const MAX_MESSAGE_CHARS = 500;

/**
 * What an OpenAI-compatible response must minimally look like. Lenient on purpose: compatible
 * servers omit fields OpenAI always sends, and a missing choice or content is reported as empty
 * text for the validator to reject, not as a transport failure.
 */
const completionSchema = z.looseObject({
  id: z.string().nullish(),
  model: z.string().nullish(),
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({ content: z.string().nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: z.looseObject({ prompt_tokens: z.number().nullish(), completion_tokens: z.number().nullish() }).nullish(),
});

/**
 * Room for the summary and, in projection mode, its JSON and lists: about two characters per token
 * is generous for prose, so a reply that still hits the limit is genuinely too long.
 */
export function maxCompletionTokens(packet: Packet): number {
  return Math.ceil(packet.policy.maxSummaryChars / 2) + 256;
}

const failure = (kind: ModelFailureKind, status: number | null, message: string, retryAfterSeconds: number | null = null): { readonly ok: false; readonly error: ModelFailure } => ({
  ok: false,
  error: { kind, status, message: message.slice(0, MAX_MESSAGE_CHARS), retryAfterSeconds },
});

function toChatMessage(message: NativeMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content };
    case "user":
      return { role: "user", content: message.content };
    case "assistant":
      return { role: "assistant", content: message.content };
  }
}

/** `retry-after-ms`, else `retry-after` as seconds or as an HTTP date, in whole seconds. */
export function retryAfterSeconds(headers: Headers | undefined, now: number): number | null {
  const millis = Number(headers?.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(millis) && millis >= 0) return Math.ceil(millis / 1000);
  const value = headers?.get("retry-after")?.trim();
  if (value === undefined || value === "") return null;
  if (/^\d+(?:\.\d+)?$/.test(value)) return Math.ceil(Number(value));
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}

/** The SDK's error classes, mapped once to the kinds a caller decides retries by. */
function modelFailure(error: unknown): { readonly ok: false; readonly error: ModelFailure } {
  // Subclass before superclass: a timeout is a connection error too.
  if (error instanceof APIConnectionTimeoutError) return failure("timeout", null, error.message);
  if (error instanceof APIConnectionError) return failure("network", null, error.message);
  if (error instanceof APIError) {
    const status = typeof error.status === "number" ? error.status : null;
    if (status === 429) return failure("rate_limited", status, error.message, retryAfterSeconds(error.headers, Date.now()));
    if (status === 408) return failure("timeout", status, error.message);
    if (status !== null && status >= 500) return failure("server_error", status, error.message);
    if (status !== null && status >= 400) return failure("rejected", status, error.message);
    return failure("network", status, error.message);
  }
  // Anything else the SDK raises is a request it refused to send (a configuration problem).
  if (error instanceof OpenAIError) return failure("rejected", null, error.message);
  // Not the model's failure but ours: surface it instead of recording it as model evidence.
  throw error;
}

/** A JSON schema a provider's reply is held to (`response_format`). */
export interface JsonSchemaResponseFormat {
  readonly type: "json_schema";
  readonly json_schema: { readonly name: string; readonly strict: boolean; readonly schema: Record<string, unknown> };
}

/** The projection's shape, for providers that can be held to it (`response_format`). */
const PROJECTION_RESPONSE_FORMAT: JsonSchemaResponseFormat = {
  type: "json_schema",
  json_schema: { name: "session_projection", strict: true, schema: PROJECTION_JSON_SCHEMA },
};

/**
 * One compactor attempt. With `repair`, the request goes on after the packet's two messages with
 * the previous attempt's refused reply and why it was refused (`repairMessages`).
 */
export async function runCompactorModel(
  env: Env,
  packet: Packet,
  model: string,
  profile: string = DEFAULT_PROFILE,
  repair?: RepairTurn,
): Promise<Result<ModelReceipt, ModelFailure>> {
  // Workers freeze the clock during synchronous work, so latency counts only time spent waiting on I/O.
  const started = Date.now();
  if (openAiApiKey(env, profile) === undefined && profile === DEFAULT_PROFILE) {
    const text = offlineCompaction(packet);
    return ok({ provider: OFFLINE_COMPACTOR.provider, model: OFFLINE_COMPACTOR.model, responseId: null, finishReason: null, usage: null, latencyMs: Date.now() - started, text });
  }
  return chatCompletion(env, profile, {
    model,
    messages: repair === undefined ? compactorMessages(packet) : repairMessages(packet, repair),
    maxCompletionTokens: maxCompletionTokens(packet),
    ...(packet.outputMode === "projection" && structuredOutput(env, profile) ? { responseFormat: PROJECTION_RESPONSE_FORMAT } : {}),
  });
}

/**
 * One chat completion on a provider profile (no tools). The caller decides what happens without a
 * key on the default profile; a named profile without its key is a misconfiguration, reported.
 */
export async function chatCompletion(
  env: Env,
  profile: string,
  request: {
    readonly model: string;
    readonly messages: readonly NativeMessage[];
    readonly maxCompletionTokens?: number;
    readonly responseFormat?: JsonSchemaResponseFormat;
  },
): Promise<Result<ModelReceipt, ModelFailure>> {
  const started = Date.now();
  const apiKey = openAiApiKey(env, profile);
  if (apiKey === undefined) return failure("rejected", null, `provider profile ${profile} has no API key configured`);
  const baseURL = openAiBaseUrl(env, profile);
  if (baseURL === undefined) return failure("rejected", null, "OPENAI_BASE_URL is not an http(s) URL");

  let response: unknown;
  try {
    const client = new OpenAI({
      apiKey,
      baseURL,
      timeout: modelTimeoutMs(env),
      maxRetries: modelMaxRetries(env),
      // Explicit nulls: otherwise the SDK reads these from `process.env`, which on Workers mirrors
      // the bindings; the request must carry only what Foldline's configuration says.
      organization: null,
      project: null,
      webhookSecret: null,
    });
    response = await client.chat.completions.create({
      model: request.model,
      messages: request.messages.map(toChatMessage),
      temperature: 0,
      ...(request.maxCompletionTokens === undefined ? {} : { max_completion_tokens: request.maxCompletionTokens }),
      ...(request.responseFormat === undefined ? {} : { response_format: request.responseFormat }),
    });
  } catch (error) {
    return modelFailure(error);
  }
  const latencyMs = Date.now() - started;

  const completion = completionSchema.safeParse(response);
  if (!completion.success) return failure("rejected", null, "the endpoint's response is not a chat completion");
  const { id, model: reportedModel, choices, usage } = completion.data;
  const choice = choices?.[0];
  const inputTokens = usage?.prompt_tokens;
  const outputTokens = usage?.completion_tokens;
  return ok({
    provider: "openai-compatible",
    model: reportedModel !== undefined && reportedModel !== null && reportedModel !== "" ? reportedModel : request.model,
    responseId: id ?? null,
    finishReason: choice?.finish_reason ?? null,
    usage: typeof inputTokens === "number" && typeof outputTokens === "number" ? { inputTokens, outputTokens } : null,
    latencyMs,
    text: choice?.message?.content ?? "",
  });
}
