// The cost section (§10): what a group conversation costs on Cloudflare, from what the Worker used.
// A generated group chat (lib/memory-conversation.mjs, 8 people and the agent's replies) is appended
// the way a Telegram webhook delivers it, one event per request, with compaction and memory
// extraction running behind it; the Worker's usage ledger (src/storage/usage-meter.ts, USAGE_METER on)
// is read before and after, once everything the appends started has settled. It runs on a Worker of
// its own (fresh D1/R2/queue state, no model key), so nothing else's usage is in the ledger. Every figure per 1,000
// messages is that difference, measured; the monthly cost is computed from it (lib/cost-report.mjs).
import { join } from "node:path";
import { Api, LogFollower, waitForCatchUp } from "./api.mjs";
import { memoryConversation, memoryEvents } from "./memory-conversation.mjs";
import { round } from "./stats.mjs";
import { applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { INSTRUMENTED_MAIN } from "./instrumented.mjs";
import { d1BytesByPart } from "./d1-parts.mjs";
import { logFloor } from "./log-floor.mjs";
import { UsageLedger, per1000 } from "./usage-ledger.mjs";

const CONVERSATION = "api:bench:cost";
const AGENT = "b-cost";
const MODEL = "bench-cost";
const SEED = 16;
/** The trigger and retain of the memory section: compaction runs every ~10,000 characters. */
const POLICY = { triggerInputChars: 20_000, retainInputChars: 10_000 };

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
  const grown = (/** @type {Record<string, number>} */ after, /** @type {Record<string, number>} */ before) =>
    Object.fromEntries(Object.entries(after).map(([name, bytes]) => [name, bytes - (before[name] ?? 0)]));
  const parts = grown(full.parts, empty.parts);
  const tables = Object.fromEntries(Object.entries(grown(full.tables, empty.tables)).filter(([, bytes]) => bytes > 0).sort(([, a], [, b]) => b - a));
  // The floor the log's guarantees set: the same events spelled as small as each guarantee allows.
  const floor = await logFloor(persistDir);
  return { ...measured, storage: { parts, tables, total: full.total - empty.total, textBytes: full.textBytes, floor } };
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
  const ledger = new UsageLedger(api, AGENT);
  const before = await ledger.settled();
  ledger.reads = 0;
  const started = Date.now();
  let requests = 0;
  for (const event of events) {
    await api.expect("cost append", [200, 201], "POST", `${Api.conversationPath(CONVERSATION)}/events`, event);
    requests += 1;
  }
  await waitForCatchUp({ api, follower, agentId: AGENT, trigger: POLICY.triggerInputChars, onWait: (w) => log(`  cost: ${w}`) });
  const after = await ledger.settled();
  const reads = ledger.reads;
  const seconds = (Date.now() - started) / 1000;
  // One usage read on its own (nothing else runs now): what each of the `reads` above added.
  const one = await ledger.oneRead(after);
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
