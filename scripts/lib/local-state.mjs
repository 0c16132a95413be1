// The local service's own state beside wrangler's: the API token `npm start` made and the demo
// bot's webhook secret. It lives under .wrangler/ with the local D1 it belongs to, so deleting
// .wrangler resets both together; only the token's SHA-256 is in D1, the token itself only here
// (mode 0600, never committed: .wrangler/ is ignored).
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const LOCAL_STATE_PATH = join(ROOT, ".wrangler", "foldline", "local.json");
/** The path as a reader types it from the project root. */
export const LOCAL_STATE_DISPLAY = relative(ROOT, LOCAL_STATE_PATH);

/** The demo bot's Telegram id: any digits work locally; this one is no real bot's. */
export const DEMO_BOT_ID = "4200000001";
/** The local token's scopes: every conversation and every agent, as an operator's would be. */
const LOCAL_SCOPES = ["*", "agent:*"];

/**
 * The project's own wrangler, run by the Node running this script (the pinned Node 22 under
 * `npm run …`), with wrangler's confirmation prompts answered.
 * @param {string[]} args
 * @param {{ capture?: boolean }} [options]
 */
export function wrangler(args, { capture = false } = {}) {
  const entry = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  if (!existsSync(entry)) {
    console.error("wrangler is not installed here: run `npm ci` first");
    process.exit(1);
  }
  return spawnSync(process.execPath, [entry, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: capture ? ["ignore", "pipe", "pipe"] : "inherit",
    env: { ...process.env, CI: "true", NO_COLOR: "1" },
  });
}

/** @typedef {{ token: string, tokenCreatedAt: string, telegramBotId: string, telegramWebhookSecret: string }} LocalState */

/** @returns {LocalState | undefined} */
export function readLocalState() {
  if (!existsSync(LOCAL_STATE_PATH)) return undefined;
  try {
    const state = JSON.parse(readFileSync(LOCAL_STATE_PATH, "utf8"));
    const valid =
      typeof state.token === "string" && /^fl_[A-Za-z0-9_-]{43}$/.test(state.token) &&
      typeof state.telegramWebhookSecret === "string" && /^[A-Za-z0-9_-]{1,256}$/.test(state.telegramWebhookSecret) &&
      state.telegramBotId === DEMO_BOT_ID && typeof state.tokenCreatedAt === "string";
    return valid ? state : undefined;
  } catch {
    return undefined;
  }
}

/** @param {LocalState} state */
function writeLocalState(state) {
  mkdirSync(dirname(LOCAL_STATE_PATH), { recursive: true });
  writeFileSync(LOCAL_STATE_PATH, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  chmodSync(LOCAL_STATE_PATH, 0o600);
}

const tokenHash = (/** @type {string} */ token) => createHash("sha256").update(token).digest("hex");

/** Whether the local D1 holds this token's hash, unrevoked. @param {string} token */
function tokenOnFile(token) {
  // The hash is 64 hex digits computed here, so quoting it inline is safe.
  const sql = `SELECT count(*) AS n FROM api_tokens WHERE token_hash = '${tokenHash(token)}' AND revoked_at IS NULL`;
  const result = wrangler(["d1", "execute", "DB", "--local", "--json", "--command", sql], { capture: true });
  if (result.status !== 0) throw new Error(`could not read the local D1:\n${result.stderr}`);
  const [first] = JSON.parse(result.stdout);
  return first?.results?.[0]?.n === 1;
}

/**
 * The local token and demo webhook secret, made once: a second start finds them (and the token's
 * hash in the local D1) and makes nothing. A token whose hash is gone (the local D1 was reset, or
 * the token revoked) is replaced. `created` says whether the token is new, so it is printed once.
 * @returns {{ state: LocalState, created: boolean }}
 */
export function ensureLocalState() {
  const existing = readLocalState();
  if (existing !== undefined && tokenOnFile(existing.token)) return { state: existing, created: false };

  const token = `fl_${randomBytes(32).toString("base64url")}`;
  const createdAt = new Date().toISOString();
  const sql = `INSERT INTO api_tokens (token_hash, name, scopes, created_at) VALUES ('${tokenHash(token)}', 'local', '${JSON.stringify(LOCAL_SCOPES)}', '${createdAt}')`;
  const result = wrangler(["d1", "execute", "DB", "--local", "--command", sql], { capture: true });
  if (result.status !== 0) throw new Error(`could not store the local token's hash:\n${result.stderr}`);
  const state = {
    token,
    tokenCreatedAt: createdAt,
    telegramBotId: DEMO_BOT_ID,
    // Kept across token renewals: a webhook registered with it keeps working.
    telegramWebhookSecret: existing?.telegramWebhookSecret ?? randomBytes(24).toString("base64url"),
  };
  writeLocalState(state);
  return { state, created: true };
}
