#!/usr/bin/env node
// `npm start`: the local service on its embedded default — local D1, R2, Queues and Durable
// Objects under .wrangler/state, migrations applied first, no Cloudflare account, no API key —
// with a local API token, the demo bot's webhook secret and the demo agent made once (later starts
// find them and make nothing), and a link to the inspector.
import "./offline-env.mjs";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { d1BindingsOf } from "./lib/d1-bindings.mjs";
import { registerDemoAgent } from "./lib/demo-agent.mjs";
import { DEFAULT_PORT, localPort, localUrl } from "./lib/local-port.mjs";
import { DEMO_BOT_ID, LOCAL_STATE_DISPLAY, ROOT, ensureLocalState, wrangler } from "./lib/local-state.mjs";
import { backfillSearch, releaseLog } from "./lib/search-backfill.mjs";
import { holdStartLock } from "./lib/start-lock.mjs";

const PORT = localPort();
const URL_BASE = localUrl(PORT);
const DEV_VARS = join(ROOT, ".dev.vars");
const GENERATED_ENV = join(ROOT, ".wrangler", "foldline", "start.env");
// From the first migration on this start holds the local state: `npm run reset` refuses meanwhile.
holdStartLock(PORT);

/** The assignments of a dotenv file (enough of the format to see which keys it sets). @param {string} path */
function readDotenv(path) {
  if (!existsSync(path)) return new Map();
  const entries = readFileSync(path, "utf8")
    .split("\n")
    .map((line) => /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line))
    .filter((match) => match !== null)
    .map((match) => [match[1], match[2].trim().replace(/^(["'])(.*)\1$/, "$2")]);
  return new Map(entries);
}

// The first lines say which compactor runs, before anything else scrolls past.
const devVars = readDotenv(DEV_VARS);
const keySource = process.env.OPENAI_API_KEY ? "the environment" : devVars.get("OPENAI_API_KEY") ? ".dev.vars" : undefined;
const baseUrl = process.env.OPENAI_BASE_URL || devVars.get("OPENAI_BASE_URL") || "https://api.openai.com/v1";
if (keySource === undefined) {
  console.log("Foldline (local): no OPENAI_API_KEY is set, so compactions use Foldline's offline extractive compactor —");
  console.log("  not a language model, no network; its boundaries say so (foldline-extractive). Set OPENAI_API_KEY");
  console.log("  (and OPENAI_BASE_URL for any OpenAI-compatible endpoint) in .dev.vars or the environment for a model.\n");
} else {
  console.log(`Foldline (local): compactions call the model at ${baseUrl} with OPENAI_API_KEY from ${keySource}.\n`);
}

// The control database and every shard wrangler.toml binds (two locally), each with its own set.
const databases = d1BindingsOf(join(ROOT, "wrangler.toml"));
let applied = 0;
for (const binding of databases) {
  const migrate = wrangler(["d1", "migrations", "apply", binding, "--local"], { capture: true });
  if (migrate.status !== 0) {
    console.error(`${migrate.stdout}\n${migrate.stderr}\nFoldline: applying the migrations to the local ${binding} failed (above).`);
    process.exit(migrate.status ?? 1);
  }
  applied += new Set(migrate.stdout.match(/\d{4}_[\w-]+\.sql/g) ?? []).size;
  // Local state from before the word indexes: indexed once, a batch at a time (scripts/lib/search-backfill.mjs).
  await backfillSearch(binding, ["--local"], (line) => console.log(line));
  // This Worker is the only one appending to the local state: what a deploy releases after its
  // upload (the log kept before 0031, the high-water mark written once a row before 0032, sources
  // and skipped runs spelled whole before 0033), at once.
  await releaseLog(binding, ["--local"], (line) => console.log(line));
}
console.log(`Local D1 (.wrangler/state, ${databases.join(", ")}): ${applied === 0 ? "migrations already applied" : `${applied} migration(s) applied`}.`);

const { state, created } = ensureLocalState();

// wrangler dev reads .dev.vars only when no --env-file is given, so pass it explicitly, then a
// generated file (mode 0600) with the demo bot's webhook secret and a key from the environment.
const generated = { [`TELEGRAM_WEBHOOK_SECRET_${DEMO_BOT_ID}`]: state.telegramWebhookSecret };
if (process.env.OPENAI_API_KEY) generated.OPENAI_API_KEY = process.env.OPENAI_API_KEY;
if (process.env.OPENAI_BASE_URL) generated.OPENAI_BASE_URL = process.env.OPENAI_BASE_URL;
mkdirSync(dirname(GENERATED_ENV), { recursive: true });
writeFileSync(GENERATED_ENV, Object.entries(generated).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join("\n") + "\n", { mode: 0o600 });
const envFiles = [...(existsSync(DEV_VARS) ? [DEV_VARS] : []), GENERATED_ENV].flatMap((file) => ["--env-file", file]);

// wrangler prints the bindings table again whenever its dev registry (a directory shared by every
// `wrangler dev` on the machine) reports a change, and a Worker with a queue watches it for queue
// consumers, its own registration included: so every start printed the table twice (and again
// whenever another `wrangler dev` with a queue, such as the bench's or the browser test's, came or
// went). An empty WRANGLER_REGISTRY_PATH turns the registry off. Set WRANGLER_REGISTRY_PATH (wrangler's
// default is ~/.config/.wrangler/registry) to let another Worker under `wrangler dev` reach this
// one over a service binding.
const registry = { WRANGLER_REGISTRY_PATH: process.env.WRANGLER_REGISTRY_PATH ?? "" };
const entry = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const dev = spawn(process.execPath, [entry, "dev", "--ip", "127.0.0.1", "--port", String(PORT), ...envFiles, ...process.argv.slice(2)], {
  cwd: ROOT,
  stdio: "inherit",
  env: { ...process.env, ...registry },
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => process.exit(code ?? 0));

/** Polls /healthz until the Worker answers (wrangler builds first), or gives up after two minutes. */
async function ready() {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${URL_BASE}/healthz`, { signal: AbortSignal.timeout(2_000) })).ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  return false;
}

if (!(await ready())) {
  console.error(`Foldline: ${URL_BASE}/healthz did not answer within two minutes; see wrangler's output above.`);
} else {
  try {
    const demo = await registerDemoAgent(URL_BASE, state.token);
    const lines = [
      "",
      `Foldline is running on ${URL_BASE}`,
      created
        ? `  API token (shown once; stored in ${LOCAL_STATE_DISPLAY}, mode 0600):\n    ${state.token}`
        : `  API token: the one made on ${state.tokenCreatedAt}, stored in ${LOCAL_STATE_DISPLAY}`,
      `  demo agent "concierge" and its compactor: ${demo.status} (revision ${demo.revision}), fed by Telegram bot ${DEMO_BOT_ID}`,
      created
        ? `  inspector: ${URL_BASE}/inspector/login#token=${state.token}`
        : `  inspector: ${URL_BASE}/inspector (sign in with the token in ${LOCAL_STATE_DISPLAY})`,
      `  API reference: ${URL_BASE}/reference`,
      `  next, in another terminal: ${PORT === DEFAULT_PORT ? "" : `FOLDLINE_PORT=${PORT} `}npm run demo`,
      "",
    ];
    console.log(lines.join("\n"));
  } catch (error) {
    console.error(`Foldline: the service is up, but setting up the demo agent failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
