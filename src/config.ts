import type { AlertTarget } from "./core/alerts";
import { alertTarget } from "./core/alerts";
import { telegramChatRef } from "./core/conversation-id";

/**
 * Configuration read from the Worker's vars and secrets. Every knob has a default here and a row
 * in the configuration table of docs/OPERATIONS.md; nothing needs a code change to point Foldline elsewhere.
 */

const DEFAULT_MAX_BODY_BYTES = 1_048_576;

export function maxBodyBytes(env: Env): number {
  const parsed = Number.parseInt(env.MAX_BODY_BYTES, 10);
  return Number.isSafeInteger(parsed) && parsed > 0 ? parsed : DEFAULT_MAX_BODY_BYTES;
}

/**
 * The webhook secret of one bot: the Worker secret `TELEGRAM_WEBHOOK_SECRET_<botId>`, set with
 * `wrangler secret put`. Secrets are per bot so that rotating one bot's never touches another's.
 */
export function telegramWebhookSecret(env: Env, botId: string): string | undefined {
  const value: unknown = Reflect.get(env, `TELEGRAM_WEBHOOK_SECRET_${botId}`);
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/**
 * A declaration's provider profile names a model endpoint. `default` is `OPENAI_API_KEY` and
 * `OPENAI_BASE_URL`; a profile `p` is `OPENAI_API_KEY_P` and `OPENAI_BASE_URL_P` (upper case, `-`
 * as `_`), so several providers can serve different agents without a code change.
 */
export const DEFAULT_PROFILE = "default";

function profileVar(name: string, profile: string): string {
  return profile === DEFAULT_PROFILE ? name : `${name}_${profile.toUpperCase().replaceAll("-", "_")}`;
}

/**
 * The compactor model's API key for a profile (the Worker secret `OPENAI_API_KEY` for `default`).
 * Absent (or empty) on `default`, Foldline compacts with its offline extractive summarizer.
 */
export function openAiApiKey(env: Env, profile = DEFAULT_PROFILE): string | undefined {
  const value: unknown = Reflect.get(env, profileVar("OPENAI_API_KEY", profile));
  return typeof value === "string" && value.trim().length > 0 ? value.trim() : undefined;
}

/**
 * Whether a profile's endpoint is asked for structured output (`response_format` with a JSON
 * schema): `OPENAI_STRUCTURED_OUTPUT` for `default`, `OPENAI_STRUCTURED_OUTPUT_<PROFILE>` for the
 * others; on unless set to `off`, for the OpenAI-compatible servers that refuse the field.
 */
export function structuredOutput(env: Env, profile = DEFAULT_PROFILE): boolean {
  const value: unknown = Reflect.get(env, profileVar("OPENAI_STRUCTURED_OUTPUT", profile));
  return !(typeof value === "string" && value.trim().toLowerCase() === "off");
}

/**
 * Whether a profile's memory extraction calls its model: `OPENAI_EXTRACTION` for `default`,
 * `OPENAI_EXTRACTION_<PROFILE>` for the others; `model` unless set to `offline`, which runs
 * Foldline's deterministic extractor instead (no model call per settled boundary).
 */
export function extractionUsesModel(env: Env, profile = DEFAULT_PROFILE): boolean {
  const value: unknown = Reflect.get(env, profileVar("OPENAI_EXTRACTION", profile));
  return !(typeof value === "string" && value.trim().toLowerCase() === "offline");
}

const DEFAULT_MODEL_TIMEOUT_MS = 60_000;
/** A model call longer than ten minutes is stuck, not slow; the SDK's own default is the same. */
const MAX_MODEL_TIMEOUT_MS = 600_000;
const DEFAULT_MODEL_MAX_RETRIES = 0;
const MAX_MODEL_MAX_RETRIES = 10;

/** Timeout of one model request, `MODEL_TIMEOUT_MS`. */
export function modelTimeoutMs(env: Env): number {
  const parsed = Number.parseInt(env.MODEL_TIMEOUT_MS, 10);
  return Number.isSafeInteger(parsed) && parsed > 0 ? Math.min(parsed, MAX_MODEL_TIMEOUT_MS) : DEFAULT_MODEL_TIMEOUT_MS;
}

/** Retries inside one model call, `MODEL_MAX_RETRIES` (the queue retries whole attempts on top). */
export function modelMaxRetries(env: Env): number {
  const parsed = Number.parseInt(env.MODEL_MAX_RETRIES, 10);
  return Number.isSafeInteger(parsed) && parsed >= 0 ? Math.min(parsed, MAX_MODEL_MAX_RETRIES) : DEFAULT_MODEL_MAX_RETRIES;
}

const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";

/**
 * Base URL of the OpenAI-compatible endpoint, `OPENAI_BASE_URL` (OpenAI, Workers AI's
 * OpenAI-compatible endpoint, AI Gateway, a self-hosted server). `undefined` when it is set but is
 * not an http(s) URL: a misconfiguration to report, not something to guess around.
 */
export function openAiBaseUrl(env: Env, profile = DEFAULT_PROFILE): string | undefined {
  const own: unknown = Reflect.get(env, profileVar("OPENAI_BASE_URL", profile));
  const value: unknown = typeof own === "string" && own.trim() !== "" ? own : Reflect.get(env, "OPENAI_BASE_URL");
  const text = typeof value === "string" && value.trim() !== "" ? value.trim() : DEFAULT_OPENAI_BASE_URL;
  const url = URL.parse(text);
  return url !== null && (url.protocol === "https:" || url.protocol === "http:") ? text : undefined;
}

function seconds(value: string, fallback: number): number {
  const parsed = Number.parseInt(value, 10);
  return Number.isSafeInteger(parsed) && parsed >= 0 ? parsed : fallback;
}

/**
 * First delay before a failed attempt of any queue job is retried, `QUEUE_RETRY_BASE_SECONDS`. A
 * deployment that still sets the setting's former name, `COMPACTION_RETRY_BASE_SECONDS`, keeps its
 * value: wrangler.toml no longer defines that name, so it is set only by someone who chose it.
 */
export function queueRetryBaseSeconds(env: Env): number {
  const former = (env as unknown as Record<string, unknown>)["COMPACTION_RETRY_BASE_SECONDS"];
  return seconds(typeof former === "string" ? former : env.QUEUE_RETRY_BASE_SECONDS, 5);
}

/** First backoff of a chain after a dead-lettered compaction, `COMPACTION_BACKOFF_BASE_SECONDS`. */
export const compactionBackoffBaseSeconds = (env: Env): number => seconds(env.COMPACTION_BACKOFF_BASE_SECONDS, 30);

/** The direct-reply allowlist, `DIRECT_REPLY_AGENTS`: the only agents whose runs reach a chat. */
export function directReplyAgents(env: Env): ReadonlySet<string> {
  return new Set(env.DIRECT_REPLY_AGENTS.split(",").map((id) => id.trim()).filter((id) => id !== ""));
}

/**
 * The Bot API token of one bot: the Worker secret `TELEGRAM_BOT_TOKEN_<botId>`, per bot like the
 * webhook secret. Only a value shaped like a Bot API token (`<bot id>:<secret>`) is returned: the
 * token becomes part of a URL path, so anything else is a misconfiguration, never a request.
 */
export function telegramBotToken(env: Env, botId: string): string | undefined {
  const value: unknown = Reflect.get(env, `TELEGRAM_BOT_TOKEN_${botId}`);
  return typeof value === "string" && /^\d+:[A-Za-z0-9_-]+$/.test(value.trim()) ? value.trim() : undefined;
}

const DEFAULT_TELEGRAM_API_BASE_URL = "https://api.telegram.org";

/**
 * The Bot API server, `TELEGRAM_API_BASE_URL` (a self-hosted Bot API server or a test double can
 * stand in), without a trailing slash. `undefined` when it is set but is not an http(s) URL.
 */
export function telegramApiBaseUrl(env: Env): string | undefined {
  const value: unknown = Reflect.get(env, "TELEGRAM_API_BASE_URL");
  const text = typeof value === "string" && value.trim() !== "" ? value.trim() : DEFAULT_TELEGRAM_API_BASE_URL;
  const url = URL.parse(text);
  return url !== null && (url.protocol === "https:" || url.protocol === "http:") ? text.replace(/\/+$/, "") : undefined;
}

/**
 * The operator's Telegram chat for incident summaries, `OPERATOR_CHAT` as `<botId>:<chatId>`
 * (empty: none). The bot's token is its `TELEGRAM_BOT_TOKEN_<botId>`.
 */
export function operatorChat(env: Env): { botId: string; chatId: number } | undefined {
  return telegramChatRef(env.OPERATOR_CHAT.trim());
}

/**
 * The plan watchdog, `PLAN_WATCHDOG_SECONDS`: a plan with no boundary this long after its job was
 * sent gets the job sent again (same packet), and again every period while it stays open.
 */
export const planWatchdogSeconds = (env: Env): number => Math.max(1, seconds(env.PLAN_WATCHDOG_SECONDS, 900));

/** `PLAN_STALLED_SECONDS`: a plan open this long raises a `compaction_stalled` incident (once per plan). */
export const planStalledSeconds = (env: Env): number => Math.max(1, seconds(env.PLAN_STALLED_SECONDS, 3_600));

/**
 * `HOT_WINDOW_EVENTS`: the fewest uncovered log events a chain holds in its object's memory before
 * it counts as behind (`durable/hot-chain` `windowBound`), so a chain whose compactions keep
 * failing costs its conversation's object a bounded amount of memory, never one that grows with the
 * backlog.
 */
export const hotWindowEvents = (env: Env): number => Math.max(1, seconds(env.HOT_WINDOW_EVENTS, 16_384));

/**
 * The operator's alert webhook, `OPS_ALERT_URL` (empty: off), and its signing key, the secret
 * `OPS_ALERT_SECRET`, as `core/alerts` judges them.
 */
export function opsAlertTarget(env: Env): AlertTarget {
  const url: unknown = Reflect.get(env, "OPS_ALERT_URL");
  const secret: unknown = Reflect.get(env, "OPS_ALERT_SECRET");
  return alertTarget(typeof url === "string" ? url : "", typeof secret === "string" ? secret : undefined);
}

/** The shortest monitor token taken: 32 characters of the token alphabet, as guessable as an API token is not. */
const MONITOR_TOKEN = /^[A-Za-z0-9_-]{32,256}$/;

/**
 * The health monitor's credential, the Worker secret `OPS_MONITOR_TOKEN`: a bearer token that reads
 * `GET /v1/ops/health` and nothing else, checked against the secret itself, never against the
 * control database, so a monitor is told which database is down when the control database is.
 * Unset, or shorter than 32 characters of `A-Z a-z 0-9 _ -`: no monitor token is accepted.
 */
export function opsMonitorToken(env: Env): string | undefined {
  const token: unknown = Reflect.get(env, "OPS_MONITOR_TOKEN");
  return typeof token === "string" && MONITOR_TOKEN.test(token) ? token : undefined;
}

