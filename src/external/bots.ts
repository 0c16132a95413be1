import type { ReplyMode } from "../core/declarations";
import { DEFAULT_BOT_TIMEOUT_MS, isReplySecretName } from "../core/declarations";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import type { BotPayload } from "./payload";
import { botAnswerSchema } from "./payload";
import { SIGNATURE_HEADER, signBody } from "./signature";

/**
 * The hand-off to an external bot: the composed payload goes to the bot's own code — over Workers
 * RPC through a service binding, or as a signed HTTP POST — and its answer comes back validated.
 *
 * Failures are classified for the reply job: `unreachable` and `timeout` are worth another attempt
 * (the bot may be deploying or overloaded); `rejected` (a missing binding or secret, a refusal) and
 * `invalid_answer` would fail the same way again, so they are recorded once and not retried.
 */

export type ExternalMode = Extract<ReplyMode, { mode: "service" | "http" }>;

export interface BotReply {
  readonly text: string;
  readonly latencyMs: number;
  readonly via: "service" | "http";
}

export interface BotFailure {
  readonly kind: "unreachable" | "timeout" | "rejected" | "invalid_answer";
  readonly message: string;
}

/** Error text is evidence kept in incidents, bounded: a bot may echo the whole payload back. */
const MAX_MESSAGE_CHARS = 500;
/** Far above any valid answer (MAX_TEXT_CHARS of text plus JSON), far below a Worker's memory. */
const MAX_ANSWER_CHARS = 1_000_000;

const failure = (kind: BotFailure["kind"], message: string): { readonly ok: false; readonly error: BotFailure } => ({
  ok: false,
  error: { kind, message: message.slice(0, MAX_MESSAGE_CHARS) },
});

const describe = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

function validated(answer: unknown, started: number, via: BotReply["via"]): Result<BotReply, BotFailure> {
  const parsed = botAnswerSchema.safeParse(answer);
  if (!parsed.success) return failure("invalid_answer", `the bot's answer is not { text }: ${parsed.error.issues.map((i) => `${i.path.join(".") || "answer"}: ${i.message}`).join("; ")}`);
  return ok({ text: parsed.data.text, latencyMs: Date.now() - started, via });
}

/**
 * The Worker secret holding an http bot's HMAC key, read like config.ts reads secrets. Only names
 * in the reply-secret namespace are read, also for a declaration stored before it was enforced.
 */
function botSecret(env: Env, name: string): string | undefined {
  if (!isReplySecretName(name)) return undefined;
  const value: unknown = Reflect.get(env, name);
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

export async function askExternalBot(env: Env, reply: ExternalMode, payload: BotPayload): Promise<Result<BotReply, BotFailure>> {
  return reply.mode === "service" ? askService(env, reply.binding, payload) : askHttp(env, reply, payload);
}

async function askService(env: Env, binding: string, payload: BotPayload): Promise<Result<BotReply, BotFailure>> {
  // The binding is named by a declaration, not by wrangler's generated Env, so it is looked up by name.
  const service: unknown = Reflect.get(env, binding);
  const method: unknown = typeof service === "object" || typeof service === "function" ? (service === null ? undefined : Reflect.get(service, "reply")) : undefined;
  if (typeof method !== "function") return failure("rejected", `no service binding ${binding} with a reply() method is configured`);
  const started = Date.now();
  // An RPC call has no deadline of its own; without one a stuck bot would hold the queue consumer.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), DEFAULT_BOT_TIMEOUT_MS);
  });
  try {
    const answer: unknown = await Promise.race([Reflect.apply(method, service, [payload]) as unknown, deadline]);
    if (answer === "timeout") return failure("timeout", `${binding}.reply() did not answer within ${DEFAULT_BOT_TIMEOUT_MS} ms`);
    return validated(answer, started, "service");
  } catch (error) {
    return failure("unreachable", `${binding}.reply() failed: ${describe(error)}`);
  } finally {
    clearTimeout(timer);
  }
}

async function askHttp(env: Env, reply: Extract<ExternalMode, { mode: "http" }>, payload: BotPayload): Promise<Result<BotReply, BotFailure>> {
  const secret = botSecret(env, reply.secret);
  // Never send unsigned: the bot could not tell Foldline from anyone else who knows its URL.
  if (secret === undefined) return failure("rejected", `the Worker secret ${reply.secret} is not set, or is not a BOT_HMAC_<NAME> secret`);
  const body = JSON.stringify(payload);
  const signature = await signBody(secret, body, Math.floor(Date.now() / 1_000));
  const signal = AbortSignal.timeout(reply.timeoutMs);
  const started = Date.now();
  let response: Response;
  try {
    response = await fetch(reply.url, {
      method: "POST",
      headers: { "content-type": "application/json", [SIGNATURE_HEADER]: signature },
      body,
      signal,
      // A redirect would re-send the signed context to a URL no declaration named.
      redirect: "manual",
    });
  } catch (error) {
    if (signal.aborted) return failure("timeout", `${reply.url} did not answer within ${reply.timeoutMs} ms`);
    return failure("unreachable", `${reply.url}: ${describe(error)}`);
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    return failure(signal.aborted ? "timeout" : "unreachable", `${reply.url}: reading the answer failed: ${describe(error)}`);
  }
  if (response.status < 200 || response.status > 299) {
    // 5xx and 429 say "not now", worth retrying; any other status is the bot's considered refusal.
    const kind = response.status >= 500 || response.status === 429 ? "unreachable" : "rejected";
    return failure(kind, `${reply.url} answered ${response.status}: ${text.slice(0, 200)}`);
  }
  if (text.length > MAX_ANSWER_CHARS) return failure("invalid_answer", `the answer is longer than ${MAX_ANSWER_CHARS} characters`);
  let answer: unknown;
  try {
    answer = JSON.parse(text) as unknown;
  } catch {
    return failure("invalid_answer", "the answer is not JSON");
  }
  return validated(answer, started, "http");
}
