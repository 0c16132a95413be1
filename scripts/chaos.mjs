// `npm run chaos`: the real Worker under `wrangler dev`, crashed on purpose. Several conversations
// take appends continuously with compaction on (a small policy, a slow loopback fake model so that
// crashes land during model calls); the runtime's whole process group is SIGKILLed N times at random
// moments and restarted on the same persisted state. Then, with no new message: every acknowledged
// append must be stored exactly once with a gap-free sequence, every chain must settle (no open
// plan) within the plan watchdog plus a margin, and every chain must verify. Prints a table and
// exits non-zero on any failure. Loopback only; nothing is downloaded.
//
//   npm run chaos -- [--kills 4] [--duration 60] [--conversations 4] [--watchdog 10] [--margin 240]
//                    [--model-delay-ms 2000] [--pace-ms 100] [--keep]
// Each option also reads CHAOS_<NAME> from the environment (CHAOS_KILLS=2 npm run chaos).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startFakeOpenAi } from "../test/fake-openai/server.ts";
import { prng, sentence } from "./lib/synthetic-text.mjs";
import { applyMigrations, createToken, freePort, snapshotApp, startWorker, writeEnvFile } from "./lib/worker.mjs";
import { failures, ledger, openPlans } from "./lib/chaos-checks.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const OPTIONS = {
  kills: 4,
  duration: 60,
  conversations: 4,
  watchdog: 10,
  // The backlog left at the last kill is compacted by catch-up runs, one at a time per chain, so
  // the margin covers that backlog, not only a re-sent job.
  margin: 240,
  "model-delay-ms": 2_000,
  "pace-ms": 100,
};
const { values } = parseArgs({
  options: { ...Object.fromEntries(Object.keys(OPTIONS).map((name) => [name, { type: "string" }])), keep: { type: "boolean", default: false } },
});
/** @param {keyof typeof OPTIONS} name */
function option(name) {
  const raw = values[name] ?? process.env[`CHAOS_${name.toUpperCase().replaceAll("-", "_")}`];
  const value = raw === undefined ? OPTIONS[name] : Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number ≥ 0, got ${raw}`);
  return value;
}
const KILLS = option("kills");
const DURATION_MS = option("duration") * 1_000;
const CONVERSATIONS = Math.max(1, option("conversations"));
const WATCHDOG_S = option("watchdog");
const MARGIN_MS = option("margin") * 1_000;
const PACE_MS = option("pace-ms");
const AGENT = "chaos";
const KEY_PREFIX = "chaos-";

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1).padStart(6)}s`;
/** @param {string} line */
const log = (line) => console.log(`[chaos ${elapsed()}] ${line}`);
/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const work = mkdtempSync(join(tmpdir(), "foldline-chaos-"));
const appDir = join(work, "app");
const persistDir = join(work, "state");
const envFile = join(work, "chaos.env");
snapshotApp(ROOT, appDir, "worktree");
applyMigrations(ROOT, appDir, persistDir);
const token = createToken(ROOT, appDir, persistDir, ["api:chaos:*", `agent:${AGENT}`], "chaos");
const fake = await startFakeOpenAi({ summaryChars: 300, delayMs: option("model-delay-ms") });
await writeEnvFile(envFile, {
  OPENAI_API_KEY: "chaos-not-a-real-key",
  OPENAI_BASE_URL: fake.baseUrl,
  QUEUE_RETRY_BASE_SECONDS: "1",
  COMPACTION_BACKOFF_BASE_SECONDS: "2",
  // The plan watchdog in seconds, so a plan whose job died with the runtime is re-sent within the run.
  PLAN_WATCHDOG_SECONDS: String(WATCHDOG_S),
});
const port = await freePort(8795);
const workerOptions = { root: ROOT, appDir, persistDir, envFile, port, logPath: join(work, "wrangler.log"), log };
let worker = await startWorker(workerOptions);
const url = worker.url;
log(`work directory ${work}; ${CONVERSATIONS} conversations, ${KILLS} kills over ${DURATION_MS / 1000}s, model answers after ${option("model-delay-ms")} ms`);

/** @param {string} method @param {string} path @param {unknown} [body] */
async function request(method, path, body) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  return { status: response.status, json: /** @type {() => Promise<any>} */ (() => response.json()) };
}
/** @param {string} conversation */
const conversationPath = (conversation) => `/v1/conversations/${encodeURIComponent(conversation)}`;

const shared = { enabled: true, provider: { profile: "default", model: "chaos-model" }, sources: ["api:chaos:*"], admitSensitive: true, historyAgents: [AGENT], documents: [], documentBudgetChars: 4_000 };
const policy = { triggerInputChars: 3_000, retainInputChars: 1_200, maxFrozenEvents: 200, maxFrozenChars: 6_000, maxSummaryChars: 1_000 };
const registered = await request("PUT", `/v1/agents/${AGENT}`, {
  agent: { id: AGENT, compactorId: `${AGENT}.compactor`, ...shared },
  compactor: { id: `${AGENT}.compactor`, targetId: AGENT, ...shared, policy, outputMode: "projection" },
});
if (registered.status !== 201 && registered.status !== 200) throw new Error(`registering ${AGENT} answered ${registered.status}`);

// --- appends, crashes -------------------------------------------------------------------------

const runTag = Date.now().toString(36);
const conversations = Array.from({ length: CONVERSATIONS }, (_, i) => `api:chaos:${runTag}-${i + 1}`);
/** @type {Map<string, Set<string>>} acknowledged keys per conversation */
const acked = new Map(conversations.map((c) => [c, new Set()]));
let appending = true;
let attempts = 0;

/** Appends to one conversation until told to stop, retrying each key until it is acknowledged. @param {string} conversation @param {number} index */
async function appender(conversation, index) {
  const random = prng(index + 1);
  for (let i = 1; appending; i++) {
    const key = `${KEY_PREFIX}${index}-${i}`;
    const event = { kind: "source", idempotencyKey: key, body: { messageId: String(i), author: { id: "ada", name: "Ada" }, text: sentence(random, 80, 320) } };
    // A key once sent is retried until acknowledged (or the run gives up on it): a client that
    // never learned the answer must be able to send it again without it being stored twice.
    for (const giveUp = Date.now() + 120_000; Date.now() < giveUp; ) {
      attempts += 1;
      const status = await request("POST", `${conversationPath(conversation)}/events`, event).then((r) => r.status, () => 0);
      if (status === 200 || status === 201) {
        acked.get(conversation)?.add(key);
        break;
      }
      await sleep(250);
    }
    await sleep(PACE_MS);
  }
}

const killsAt = Array.from({ length: KILLS }, () => DURATION_MS * (0.1 + 0.8 * Math.random())).sort((a, b) => a - b);
let kills = 0;
let killsDuringModelCalls = 0;
async function killer() {
  const begin = Date.now();
  for (const at of killsAt) {
    await sleep(Math.max(0, begin + at - Date.now()));
    // Prefer a moment when the model is answering (the job is mid-call), waiting at most 5 s for one.
    for (const until = Date.now() + 5_000; fake.inFlight() === 0 && Date.now() < until; ) await sleep(50);
    const duringModelCall = fake.inFlight() > 0;
    await worker.kill();
    kills += 1;
    if (duringModelCall) killsDuringModelCalls += 1;
    log(`kill ${kills}/${KILLS}: SIGKILL of the runtime's process group${duringModelCall ? " during a model call" : ""}; restarting on the same state`);
    worker = await startWorker(workerOptions);
  }
}

const appenders = conversations.map((c, i) => appender(c, i));
const crashes = killer();
await sleep(DURATION_MS);
await crashes; // a restart still under way finishes first
appending = false;
await Promise.all(appenders);
log(`appends stopped: ${[...acked.values()].reduce((n, s) => n + s.size, 0)} acknowledged in ${attempts} attempts; waiting for every chain to settle with no new message`);

// --- settle, verify ---------------------------------------------------------------------------

/** Every page of a cursor-paged list. @param {string} path @param {string} field */
async function readAll(path, field) {
  const items = [];
  for (let after = 0; ; ) {
    const response = await request("GET", `${path}${path.includes("?") ? "&" : "?"}after=${after}&limit=500`);
    if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`);
    const page = await response.json();
    items.push(...page[field]);
    if (page.nextAfter === null) return items;
    after = page.nextAfter;
  }
}

const settleStart = Date.now();
const deadline = settleStart + WATCHDOG_S * 1_000 + MARGIN_MS;
/** @type {Map<string, { open: string[], events: { seq: number, idempotencyKey: string, kind: string, body: { runId?: string, role?: string, status?: string } }[], since: number | null }>} */
const state = new Map(conversations.map((c) => [c, { open: ["(not read yet)"], events: [], since: null }]));
for (let quiet = 0; quiet < 2 && Date.now() < deadline; ) {
  for (const conversation of conversations) {
    const path = conversationPath(conversation);
    const events = await readAll(`${path}/events`, "events");
    const open = openPlans(events, await readAll(`${path}/incidents`, "incidents"));
    const entry = state.get(conversation);
    if (entry === undefined) continue;
    entry.since = open.length > 0 ? null : (entry.since ?? Date.now());
    Object.assign(entry, { open, events });
  }
  // Settled: no open plan anywhere at two reads in a row (a settlement can plan the next catch-up run).
  quiet = [...state.values()].every((s) => s.open.length === 0) ? quiet + 1 : 0;
  if (quiet < 2) await sleep(2_000);
}

const chains = [];
for (const conversation of conversations) {
  const entry = state.get(conversation);
  if (entry === undefined) continue;
  const audit = await request("GET", `${conversationPath(conversation)}/verify?agent=${AGENT}`);
  const report = audit.status === 200 ? await audit.json() : undefined;
  chains.push({
    conversation,
    ledger: ledger(acked.get(conversation) ?? new Set(), entry.events, KEY_PREFIX),
    open: entry.open,
    settledAfterMs: entry.since === null ? null : entry.since - settleStart,
    verified: report?.valid === true,
    boundaries: report?.epochs?.[0]?.links?.length ?? 0,
  });
}
await worker.stop();
await fake.close();

// --- report -----------------------------------------------------------------------------------

const sum = (/** @type {(c: (typeof chains)[number]) => number} */ f) => chains.reduce((n, c) => n + f(c), 0);
const settled = chains.filter((c) => c.settledAfterMs !== null);
const longest = settled.length === 0 ? null : Math.max(...settled.map((c) => c.settledAfterMs ?? 0));
const seconds = (/** @type {number | null} */ ms) => (ms === null ? "never" : `${(ms / 1000).toFixed(1)} s`);
const rows = [
  ["kills", `${kills} (${killsDuringModelCalls} during a model call)`],
  ["acked", String(sum((c) => c.ledger.acked))],
  ["stored", String(sum((c) => c.ledger.stored))],
  ["lost", String(sum((c) => c.ledger.lost))],
  ["duplicated", String(sum((c) => c.ledger.duplicated))],
  ["sequence gaps", String(sum((c) => c.ledger.gaps))],
  ["chains settled / total", `${settled.length} / ${chains.length}`],
  ["longest time to settle", `${seconds(longest)} (limit ${WATCHDOG_S + MARGIN_MS / 1000} s: watchdog ${WATCHDOG_S} s + margin ${MARGIN_MS / 1000} s)`],
  ["chains verified", `${chains.filter((c) => c.verified).length} / ${chains.length}`],
  ["boundaries", chains.map((c) => c.boundaries).join(" + ")],
];
console.log(`\n| measure | value |\n| --- | --- |\n${rows.map(([k, v]) => `| ${k} | ${v} |`).join("\n")}\n`);
for (const chain of chains) {
  console.log(`${chain.conversation}: acked ${chain.ledger.acked}, stored ${chain.ledger.stored}, ${chain.boundaries} boundaries, settled ${seconds(chain.settledAfterMs)}${chain.open.length > 0 ? `, open plans ${chain.open.join(", ")}` : ""}, ${chain.verified ? "verified" : "NOT verified"}`);
}
const problems = failures(chains, { kills, killsPlanned: KILLS });
if (problems.length > 0) {
  console.log(`\nFAILED (${problems.length}):\n${problems.map((p) => `- ${p}`).join("\n")}`);
  log(`kept ${work} (wrangler.log, persisted state)`);
  process.exit(1);
}
if (!values.keep) rmSync(work, { recursive: true, force: true });
log("passed");
