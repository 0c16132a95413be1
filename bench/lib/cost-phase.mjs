// The cost section (§10): what a group conversation costs on Cloudflare, from what the Worker used.
// A generated group chat (lib/memory-conversation.mjs, 8 people and the agent's replies) is appended
// the way a Telegram webhook delivers it, one event per request, with compaction and memory
// extraction running behind it; the Worker's usage ledger (src/storage/usage-meter.ts, USAGE_METER on)
// is read before and after, once everything the appends started has settled. It runs on a Worker of
// its own (fresh D1/R2/queue state, no model key), so nothing else's usage is in the ledger. Every figure per 1,000
// messages is that difference, measured; the monthly cost is computed from it (lib/cost-report.mjs).
import { join } from "node:path";
import { Api, LogFollower, sleep, waitForCatchUp } from "./api.mjs";
import { memoryConversation, memoryEvents } from "./memory-conversation.mjs";
import { round } from "./stats.mjs";
import { applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { INSTRUMENTED_MAIN } from "./instrumented.mjs";
import { d1BytesByPart } from "./d1-parts.mjs";

const CONVERSATION = "api:bench:cost";
const AGENT = "b-cost";
const MODEL = "bench-cost";
const SEED = 16;
/** The trigger and retain of the memory section: compaction runs every ~10,000 characters. */
const POLICY = { triggerInputChars: 20_000, retainInputChars: 10_000 };

/** Usage reads made since the counter was last reset: their own D1 reads are taken out of the figures. */
let usageReads = 0;

/**
 * The Worker's usage so far (`x-foldline-usage`, on any metered request; the header is written
 * after the request's own work, so it includes this read's token check and agent read).
 * @param {Api} api
 */
async function usage(api) {
  usageReads += 1;
  const { response } = await api.metered("usage", [200], "GET", `/v1/agents/${AGENT}`);
  const header = response.headers.get("x-foldline-usage");
  if (header === null) throw new Error("no x-foldline-usage header: are D1_METER and USAGE_METER on in this Worker?");
  return JSON.parse(header);
}

/** The shards' bytes in a usage snapshot (every D1 binding but the control database `DB`). @param {any} usage */
function shardBytes(usage) {
  return Object.entries(usage.d1BytesByDatabase ?? {}).reduce((sum, [name, bytes]) => (name === "DB" ? sum : sum + Number(bytes)), 0);
}

/**
 * What `after` used beyond `before`, per 1,000 messages, less `reads` usage reads of `one`'s D1 cost.
 * @param {any} before @param {any} after @param {number} messages @param {number} reads @param {any} one
 */
function per1000(before, after, messages, reads, one) {
  const per = (/** @type {number} */ a, /** @type {number} */ b, /** @type {number} */ own = 0) => round(((a - b - reads * own) / messages) * 1000, 1);
  return {
    d1RoundTrips: per(after.d1.roundTrips, before.d1.roundTrips, one.roundTrips),
    d1Statements: per(after.d1.statements, before.d1.statements, one.statements),
    d1RowsRead: per(after.d1.rowsRead, before.d1.rowsRead, one.rowsRead),
    d1RowsWritten: per(after.d1.rowsWritten, before.d1.rowsWritten, one.rowsWritten),
    d1Bytes: per(after.d1Bytes, before.d1Bytes),
    // Control (`DB`) and the shards, apart: what fills a shard is what decides when to add one.
    d1BytesControl: per(after.d1BytesByDatabase?.DB ?? 0, before.d1BytesByDatabase?.DB ?? 0),
    d1BytesShards: per(shardBytes(after), shardBytes(before)),
    r2ClassA: per(after.r2ClassA, before.r2ClassA),
    r2ClassB: per(after.r2ClassB, before.r2ClassB),
    r2Bytes: per(after.r2BytesPut, before.r2BytesPut),
    queueSent: per(after.queueSent, before.queueSent),
    queueDelivered: per(after.queueDelivered, before.queueDelivered),
    queueRetried: per(after.queueRetried, before.queueRetried),
    objectRequests: per(after.objectRequests, before.objectRequests, one.objectRequests),
  };
}

/**
 * Waits until the usage stops moving (extraction and any alarm behind the last compaction), at most 60 s.
 * @param {Api} api
 */
async function settledUsage(api) {
  let previous = "";
  for (let i = 0; i < 60; i++) {
    const now = await usage(api);
    const key = JSON.stringify({ ...now, d1: { ...now.d1, rowsRead: 0, roundTrips: 0, statements: 0, bytesRead: 0 }, objectRequests: 0 });
    if (key === previous) return now;
    previous = key;
    await sleep(1_000);
  }
  return usage(api);
}

/**
 * Starts the cost section's own Worker (D1_METER and USAGE_METER on, no OPENAI_API_KEY), measures, stops it.
 * @param {{ root: string, appDir: string, workDir: string, fake: { baseUrl: string }, log: (line: string) => void, quick: boolean }} o
 */
export async function runCostPhase({ root, appDir, workDir, fake, log, quick }) {
  const persistDir = join(workDir, "cost-state");
  const envFile = join(workDir, "cost.env");
  applyMigrations(root, appDir, persistDir);
  const token = createToken(root, appDir, persistDir, ["api:*", "agent:*"], "bench-cost");
  const empty = await d1BytesByPart(persistDir);
  await writeEnvFile(envFile, { OPENAI_BASE_URL: fake.baseUrl, QUEUE_RETRY_BASE_SECONDS: "0", COMPACTION_BACKOFF_BASE_SECONDS: "1", D1_METER: "on", USAGE_METER: "on" });
  const worker = await startWorker({ root, appDir, persistDir, envFile, port: await freePort(8795), logPath: join(workDir, "wrangler-cost.log"), log, main: INSTRUMENTED_MAIN });
  let measured;
  try {
    measured = await measureCost(new Api(worker.url, token), log, quick);
  } finally {
    await worker.stop();
  }
  // Where the run's bytes are once the Worker let go of them (the state holds one conversation), less
  // what the migrated databases held empty (a page or more per table and index).
  const full = await d1BytesByPart(persistDir);
  const parts = Object.fromEntries(Object.entries(full.parts).map(([part, bytes]) => [part, bytes - (empty.parts[part] ?? 0)]));
  return { ...measured, storage: { parts, total: full.total - empty.total, textBytes: full.textBytes } };
}

/**
 * The statements' share of the rows, per 1,000 messages: what `after` holds beyond `before` for each.
 * @param {any} before @param {any} after @param {number} messages
 */
function statementsPer1000(before, after, messages) {
  /** @type {Map<string, any>} */
  const earlier = new Map(before.statements.map((/** @type {any} */ s) => [s.sql, s]));
  return after.statements
    .map((/** @type {any} */ s) => {
      const b = earlier.get(s.sql) ?? { calls: 0, rowsRead: 0, rowsWritten: 0 };
      const per = (/** @type {number} */ v) => round((v / messages) * 1000, 1);
      return { sql: s.sql, calls: per(s.calls - b.calls), rowsRead: per(s.rowsRead - b.rowsRead), rowsWritten: per(s.rowsWritten - b.rowsWritten) };
    })
    .filter((/** @type {any} */ s) => s.rowsRead + s.rowsWritten > 0)
    .sort((/** @type {any} */ a, /** @type {any} */ b) => b.rowsRead - a.rowsRead);
}

/**
 * @param {Api} api @param {(line: string) => void} log @param {boolean} quick
 */
async function measureCost(api, log, quick) {
  await api.registerAgent({ agentId: AGENT, sources: [CONVERSATION], model: MODEL, policy: POLICY });
  const conversation = memoryConversation({ seed: SEED, targetChars: quick ? 40_000 : 110_000 });
  const events = memoryEvents(conversation.turns, AGENT);
  const messages = conversation.turns.filter((t) => t.role === "user").length;
  const replies = conversation.turns.length - messages;
  const follower = new LogFollower(api, CONVERSATION);
  const before = await settledUsage(api);
  usageReads = 0;
  const started = Date.now();
  let requests = 0;
  for (const event of events) {
    await api.expect("cost append", [200, 201], "POST", `${Api.conversationPath(CONVERSATION)}/events`, event);
    requests += 1;
  }
  await waitForCatchUp({ api, follower, agentId: AGENT, trigger: POLICY.triggerInputChars, onWait: (w) => log(`  cost: ${w}`) });
  const after = await settledUsage(api);
  const reads = usageReads;
  const seconds = (Date.now() - started) / 1000;
  // One usage read on its own (nothing else runs now): what each of the `reads` above added.
  const next = await usage(api);
  const one = {
    roundTrips: next.d1.roundTrips - after.d1.roundTrips,
    statements: next.d1.statements - after.d1.statements,
    rowsRead: next.d1.rowsRead - after.d1.rowsRead,
    rowsWritten: next.d1.rowsWritten - after.d1.rowsWritten,
    objectRequests: next.objectRequests - after.objectRequests,
  };
  const compactions = follower.plannedRuns().length;
  log(`[cost] ${messages} messages and ${replies} replies appended one by one in ${seconds.toFixed(1)} s; ${compactions} compactions`);
  return {
    conversation: { chars: conversation.chars, messages, replies, events: events.length, sessions: conversation.sessions },
    policy: POLICY,
    compactions,
    workerRequestsPer1000Messages: round((requests / messages) * 1000, 1),
    per1000Messages: per1000(before, after, messages, reads, one),
    statementsPer1000Messages: statementsPer1000(before, after, messages),
    usageRead: { ...one, reads },
    seconds: round(seconds, 1),
  };
}
