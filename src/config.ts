/**
 * Configuration read from the Worker's vars and secrets. Every knob has a default here and a row
 * in the README's configuration table; nothing needs a code change to point Foldline elsewhere.
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
