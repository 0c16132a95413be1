// The shard section (§11): aggregate append throughput with 1, 2 and 4 shard databases, each row on
// a Worker of its own: on local D1 as it is, and with the D1 simulation on at each of
// SIMULATED_MODES (src/storage/d1-simulation.ts, `D1_SIMULATED_STATEMENT_MS`), where every database
// is a single writer with a fixed service time per statement, as Cloudflare describes D1's throughput.
//
// Local D1 runs in the same workerd process as the Worker (a SQLite file per database behind an
// object of its own), served on the one main thread that also runs the Worker and its objects, so
// shards there add no writer to measure; the simulation gives each database the one writer it has
// on Cloudflare, and the Worker's own CPU (its workerd threads', read from /proc) says where the
// machine stops adding throughput.
//
// Each row: a copy of the run's snapshot whose wrangler.toml binds exactly N shards, a fresh state
// directory with the migrations applied, a token, one agent whose sources cover every conversation
// of the load with a trigger no load comes near (no compaction runs; the logs are checked for a
// planned run afterwards), warm-up appends (each conversation placed, its object and chains warm),
// then a fixed number of single-source appends from one client per conversation, all at once.
import { cpSync, readFileSync, readdirSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Api } from "./api.mjs";
import { probeEvent } from "./conversation.mjs";
import { latencySummary, mean, round, roundSummary } from "./stats.mjs";
import { d1Bindings } from "../../scripts/lib/d1-bindings.mjs";
import { applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { INSTRUMENTED_MAIN, snapshotWithConfig } from "./instrumented.mjs";

export const SHARD_COUNTS = [1, 2, 4];
/**
 * The simulated service times per statement: 1 ms is Cloudflare's own example figure for a D1
 * query; 4 ms puts one shard's writer (5 statements an append: 50 appends/s) well below the Worker's
 * own CPU bound here, so the rows show what adding writers does before the CPU binds.
 */
export const SIMULATED_MODES = [1, 4];
/** The isolate check: a service time long enough that one writer and many cannot be mistaken. */
const ISOLATE_CHECK = { statementMs: 20, conversations: 16 };
const AGENT = "b-shards";
const MODEL = "bench-shards";
const PREFIX = "api:bench:shards:";
/** The largest trigger a declaration accepts: the load's few thousand characters per conversation never reach it. */
export const SHARD_POLICY = { triggerInputChars: 2_000_000, retainInputChars: 1_000_000, maxFrozenChars: 2_000_000 };
const WARM_APPENDS = 2;
const METERED_APPENDS = 16;

/**
 * The snapshot's wrangler.toml with its shard bindings replaced by exactly `n`: every
 * `[[d1_databases]]` table whose binding is a shard is dropped, and `n` new ones (distinct names
 * and database ids, the shard migrations) follow the control database's table.
 * @param {string} toml @param {number} n
 */
export function withShards(toml, n) {
  const blocks = [];
  let current = [];
  for (const line of toml.split("\n")) {
    if (line.startsWith("[")) {
      blocks.push(current);
      current = [];
    }
    current.push(line);
  }
  blocks.push(current);
  const isD1 = (/** @type {string[]} */ b) => b[0]?.trim() === "[[d1_databases]]";
  const binding = (/** @type {string[]} */ b) => /^binding\s*=\s*"([^"]+)"/m.exec(b.join("\n"))?.[1];
  const shards = Array.from({ length: n }, (_, i) => [
    "[[d1_databases]]",
    `binding = "DB_SHARD_${i}"`,
    `database_name = "foldline-bench-shard-${i}"`,
    `database_id = "00000000-0000-0000-0000-0000000b${String(i).padStart(4, "0")}"`,
    'migrations_dir = "migrations/shard"',
    "",
  ]);
  const out = [];
  for (const block of blocks) {
    if (isD1(block) && binding(block) !== "DB") continue;
    out.push(block);
    if (isD1(block)) out.push(...shards);
  }
  const text = out.map((b) => b.join("\n")).join("\n");
  const bound = d1Bindings(text);
  if (bound.length !== n + 1 || bound[0] !== "DB") throw new Error(`rewriting wrangler.toml for ${n} shard(s) bound ${bound.join(", ")}`);
  return text;
}

/**
 * Conversations per shard, read from the stopped Worker's control database (`conversation_placements`).
 * @param {string} persistDir
 * @returns {Promise<Record<string, number> | null>}
 */
async function placements(persistDir) {
  // Loaded here, not at the top: node:sqlite warns that it is experimental when it is imported.
  const { DatabaseSync } = await import("node:sqlite");
  const dir = join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite"))) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'conversation_placements'").get();
      if (table === undefined) continue;
      const rows = /** @type {{ shard: string, n: number }[]} */ (db.prepare("SELECT shard, count(*) AS n FROM conversation_placements WHERE conversation_id LIKE ? GROUP BY shard ORDER BY shard").all(`${PREFIX}%`));
      return Object.fromEntries(rows.map((r) => [r.shard, Number(r.n)]));
    } finally {
      db.close();
    }
  }
  return null;
}

/**
 * What each process and thread of a Worker's wrangler group used between two `cpuThreads()` reads,
 * per append: all workerd processes (the Worker's, which runs its isolate, its objects and local D1
 * on one main thread, and wrangler's dev proxy in front of it), the busiest workerd thread, and
 * wrangler's own node and esbuild.
 * @param {ReturnType<import("../../scripts/lib/worker.mjs").RunningWorker["cpuThreads"]>} before
 * @param {ReturnType<import("../../scripts/lib/worker.mjs").RunningWorker["cpuThreads"]>} after
 * @param {number} appends @param {number} wallSeconds
 */
function cpuUsed(before, after, appends, wallSeconds) {
  const earlier = new Map(before.map((t) => [`${t.pid}/${t.tid}`, t.seconds]));
  const used = after.map((t) => ({ ...t, seconds: t.seconds - (earlier.get(`${t.pid}/${t.tid}`) ?? 0) }));
  const workerd = used.filter((t) => t.process.startsWith("workerd"));
  /** @type {Map<number, number>} */
  const byProcess = new Map();
  for (const t of workerd) byProcess.set(t.pid, (byProcess.get(t.pid) ?? 0) + t.seconds);
  const sum = (/** @type {{ seconds: number }[]} */ list) => list.reduce((n, t) => n + t.seconds, 0);
  const busiest = workerd.reduce((top, t) => (top === null || t.seconds > top.seconds ? t : top), /** @type {typeof workerd[number] | null} */ (null));
  const perAppendMs = (/** @type {number} */ seconds) => round((seconds / appends) * 1000, 3);
  const cores = cpus().length;
  const workerdSeconds = sum(workerd);
  return {
    cores,
    workerdProcesses: byProcess.size,
    workerdSeconds: round(workerdSeconds, 2),
    workerdMsPerAppend: perAppendMs(workerdSeconds),
    workerdCoresBusy: round(workerdSeconds / wallSeconds, 2),
    /** The brief's bound: the throughput at which workerd would keep every core of the machine busy. */
    allCoresBoundAppendsPerSecond: round(cores / (workerdSeconds / appends), 0),
    busiestThread: busiest === null ? null : { name: `${busiest.process}/${busiest.thread}`, main: busiest.pid === busiest.tid, msPerAppend: perAppendMs(busiest.seconds), coresBusy: round(busiest.seconds / wallSeconds, 2) },
    /** One thread runs the Worker, its objects and local D1: the throughput at which it is busy all the time. */
    oneThreadBoundAppendsPerSecond: busiest === null ? null : round(appends / busiest.seconds, 0),
    otherMsPerAppend: perAppendMs(sum(used.filter((t) => !t.process.startsWith("workerd")))),
  };
}

/** The machine's CPU time so far, all cores (/proc/stat's first line, in clock ticks): busy and total. */
function machineTicks() {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  const total = fields.slice(0, 8).reduce((n, v) => n + v, 0);
  // idle and iowait are fields 4 and 5
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
}

/** A short single-source append, its key unique in its conversation. @param {string} key */
const appendEvent = (key) => probeEvent(key, `shuttle at 9? (${key})`);

/**
 * Appends one source and returns its latency; anything but 201 fails the row.
 * @param {Api} api @param {string} conversation @param {string} key
 */
async function append(api, conversation, key) {
  const response = await api.appendOne(conversation, appendEvent(key));
  if (response.status !== 201) throw new Error(`append to ${conversation} answered ${response.status}: ${response.text.slice(0, 300)}`);
  return response.ms;
}

/**
 * The state every row of one shard count starts from: the snapshot binding `shards` shards, its
 * migrations applied to a fresh directory and a token inserted, once; each row runs on its own copy.
 * @param {{ root: string, appDir: string, workDir: string, shards: number }} o
 */
function shardTemplate({ root, appDir, workDir, shards }) {
  const app = join(workDir, `shards-${shards}-app`);
  const state = join(workDir, `shards-${shards}-template`);
  snapshotWithConfig(appDir, app, (toml) => withShards(toml, shards));
  applyMigrations(root, app, state);
  const token = createToken(root, app, state, ["api:*", "agent:*"], "bench-shards");
  return { app, state, token };
}

/**
 * Starts a Worker of the template's on a fresh copy of its state, with `vars`.
 * @param {{ root: string, workDir: string, log: (line: string) => void, template: ReturnType<typeof shardTemplate>, name: string, vars: Record<string, string>, fake: { baseUrl: string } }} o
 */
async function startRow({ root, workDir, log, template, name, vars, fake }) {
  const persistDir = join(workDir, `${name}-state`);
  cpSync(template.state, persistDir, { recursive: true });
  const envFile = join(workDir, `${name}.env`);
  // No OPENAI_API_KEY: were a compaction to run, it would be the offline compactor's (none does).
  await writeEnvFile(envFile, { OPENAI_BASE_URL: fake.baseUrl, D1_METER: "on", ...vars });
  const worker = await startWorker({ root, appDir: template.app, persistDir, envFile, port: await freePort(8796), logPath: join(workDir, `wrangler-${name}.log`), log, main: INSTRUMENTED_MAIN });
  const api = new Api(worker.url, template.token);
  await api.registerAgent({ agentId: AGENT, sources: [`${PREFIX}*`], model: MODEL, policy: SHARD_POLICY });
  return { worker, api, persistDir };
}

/**
 * Does every conversation object share the Worker's module state, so that the simulation's writer
 * of a database is one writer? A Worker binding one shard, simulated at `ISOLATE_CHECK.statementMs`
 * per statement, with the usage ledger on (module state too): a burst of single appends to
 * `ISOLATE_CHECK.conversations` conversations at once (as many objects) must take at least their
 * statements × the service time, and the ledger the Worker reads must hold the objects' statements.
 * @param {{ root: string, workDir: string, fake: { baseUrl: string }, log: (line: string) => void, template: ReturnType<typeof shardTemplate> }} o
 */
async function isolateCheck({ root, workDir, fake, log, template }) {
  const { statementMs, conversations } = ISOLATE_CHECK;
  const { worker, api } = await startRow({ root, workDir, log, template, name: "shards-isolate-check", vars: { D1_SIMULATED_STATEMENT_MS: String(statementMs), USAGE_METER: "on" }, fake });
  try {
    const usage = async () => {
      const { response } = await api.metered("usage", [200], "GET", `/v1/agents/${AGENT}`);
      const header = response.headers.get("x-foldline-usage");
      if (header === null) throw new Error("no x-foldline-usage header: is USAGE_METER on?");
      return JSON.parse(header).d1;
    };
    const ids = Array.from({ length: conversations }, (_, i) => `${PREFIX}check-${i}`);
    for (let w = 0; w < WARM_APPENDS; w++) await Promise.all(ids.map((id) => append(api, id, `warm-${w}`)));
    // A usage read's own statements, to take out of the burst's.
    const u0 = await usage();
    const u1 = await usage();
    const ownStatements = u1.statements - u0.statements;
    const started = performance.now();
    await Promise.all(ids.map((id) => append(api, id, "burst")));
    const burstMs = performance.now() - started;
    const u2 = await usage();
    const statements = u2.statements - u1.statements - ownStatements;
    const oneWriterMs = statements * statementMs;
    const result = {
      statementMs,
      conversations,
      burstMs: round(burstMs, 0),
      statementsInWorkerLedger: statements,
      oneWriterMs,
      // One writer per database for all objects: the burst cannot beat its statements × the service time.
      oneWriter: burstMs >= oneWriterMs * 0.98,
      // The objects' statements reached the ledger the Worker's request read: one module instance.
      sharedModuleState: statements >= conversations * 2,
    };
    log(`[shards] isolate check: ${conversations} appends to ${conversations} objects at once on 1 shard at ${statementMs} ms/statement took ${result.burstMs} ms; the Worker's ledger holds their ${statements} statements (one writer: ≥ ${oneWriterMs} ms)`);
    return result;
  } finally {
    await worker.stop();
  }
}

/**
 * One row: a Worker binding the template's shards, with the simulation at `statementMs` (0: local D1 as it is).
 * @param {{ root: string, workDir: string, fake: { baseUrl: string }, log: (line: string) => void, template: ReturnType<typeof shardTemplate>, shards: number, statementMs: number, conversations: number, appends: number }} o
 */
async function measureRow({ root, workDir, fake, log, template, shards, statementMs, conversations, appends }) {
  const label = `${shards} shard${shards === 1 ? "" : "s"}, ${statementMs === 0 ? "local D1" : `simulated ${statementMs} ms/statement`}`;
  const name = `shards-${shards}-${statementMs === 0 ? "local" : `simulated-${statementMs}ms`}`;
  const setupStarted = performance.now();
  const { worker, api, persistDir } = await startRow({ root, workDir, log, template, name, vars: { D1_SIMULATED_STATEMENT_MS: String(statementMs) }, fake });
  /** @type {Record<string, any>} */
  let row;
  try {
    const ids = Array.from({ length: conversations }, (_, i) => `${PREFIX}${i}`);
    // Warm-up, not timed: the first append places the conversation and wakes its object, the next
    // finds the object warm for the agent's chains (the one-batch path the load then takes).
    for (let w = 0; w < WARM_APPENDS; w++) await Promise.all(ids.map((id) => append(api, id, `warm-${w}`)));
    const setupSeconds = (performance.now() - setupStarted) / 1000;

    // The load: one client per conversation, all at once, each appending until `appends` are taken.
    let taken = 0;
    /** @type {number[]} */
    const latencies = [];
    const threadsBefore = worker.cpuThreads();
    const clientBefore = process.cpuUsage();
    const machineBefore = machineTicks();
    const started = performance.now();
    await Promise.all(
      ids.map(async (id) => {
        for (let n = 0; taken < appends; n++) {
          taken += 1;
          latencies.push(await append(api, id, `load-${n}`));
        }
      }),
    );
    const wallSeconds = (performance.now() - started) / 1000;
    const client = process.cpuUsage(clientBefore);
    const machineAfter = machineTicks();
    const cpu = cpuUsed(threadsBefore, worker.cpuThreads(), latencies.length, wallSeconds);

    // What one append cost D1 (round trips, statements, which databases), asked for after the timed
    // load so that none of its samples paid for the meter's RPCs.
    /** @type {{ roundTrips: number, statements: number }[]} */
    const metered = [];
    /** @type {Set<string>} */
    const databases = new Set();
    for (let i = 0; i < METERED_APPENDS; i++) {
      const id = ids[i % ids.length] ?? `${PREFIX}0`;
      const { d1, response } = await api.metered("shard append", [201], "POST", `${Api.conversationPath(id)}/events`, appendEvent(`metered-${i}`));
      metered.push(d1);
      const named = /databases=([^;]*)/.exec(response.headers.get("x-foldline-d1-reads") ?? "")?.[1] ?? "";
      for (const db of named.split(",")) if (db !== "") databases.add(db.startsWith("DB_SHARD_") ? "its shard" : db);
    }

    // The premise: no compaction was planned in any conversation during the run.
    let planned = 0;
    let skipped = 0;
    for (const id of ids) {
      for (let after = 0; ; ) {
        const page = await api.events(id, after, 500);
        for (const event of page.events) {
          if (event.kind !== "run") continue;
          if (event.body.status === "skipped") skipped += 1;
          else if (event.body.status === "planned") planned += 1;
        }
        if (page.nextAfter === null || page.nextAfter === undefined) break;
        after = page.nextAfter;
      }
    }

    const statements = mean(metered.map((m) => m.statements));
    const clientSeconds = (client.user + client.system) / 1e6;
    row = {
      shards,
      simulated: statementMs > 0,
      statementMs,
      conversations,
      clients: conversations,
      appends: latencies.length,
      wallSeconds: round(wallSeconds, 2),
      appendsPerSecond: round(latencies.length / wallSeconds, 1),
      latency: roundSummary(latencySummary(latencies)),
      // Little's law: the mean number of appends in flight. Near the client count, every client was
      // waiting on the Worker nearly all the time: the Worker, not the client, set the pace.
      meanInFlight: round((latencies.length / wallSeconds) * (mean(latencies) / 1000), 1),
      clientCoresBusy: round(clientSeconds / wallSeconds, 2),
      cpu,
      // How busy the whole machine was during the load, in cores, and how much of that was neither
      // this Worker's processes nor the client: other work sharing the cores.
      machineCoresBusy: round(((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * cpu.cores, 2),
      d1PerAppend: { n: metered.length, roundTrips: round(mean(metered.map((m) => m.roundTrips)), 2), statements: round(statements, 2), databases: [...databases].sort() },
      // With the simulation on: what the writers alone allow with every shard kept busy (a source
      // append is one batch on its conversation's shard).
      writerBoundAppendsPerSecond: statementMs > 0 ? round((shards * 1000) / (statements * statementMs), 0) : null,
      runs: { planned, skipped },
      setupSeconds: round(setupSeconds, 1),
    };
  } finally {
    await worker.stop();
  }
  row.otherWorkCoresBusy = round(row.machineCoresBusy - row.cpu.workerdCoresBusy - row.clientCoresBusy - (row.cpu.otherMsPerAppend * row.appendsPerSecond) / 1000, 2);
  row.placements = await placements(persistDir);
  const c = row.cpu;
  log(
    `[shards] ${label}: ${row.appendsPerSecond} appends/s (p50 ${row.latency.p50} ms, p99 ${row.latency.p99} ms); workerd ${c.workerdMsPerAppend} ms CPU per append (${c.workerdCoresBusy} cores busy), busiest thread ${c.busiestThread?.msPerAppend} ms (${c.busiestThread?.coresBusy} of a core) → bounds ${c.allCoresBoundAppendsPerSecond}/s (all cores), ${c.oneThreadBoundAppendsPerSecond}/s (one thread)` +
      `${row.writerBoundAppendsPerSecond === null ? "" : `; writers' bound ${row.writerBoundAppendsPerSecond}/s`}; client ${row.clientCoresBusy} cores, ${row.meanInFlight} in flight; other work ${row.otherWorkCoresBusy} cores; placements ${JSON.stringify(row.placements)}; ${row.runs.planned} compactions planned`,
  );
  return row;
}

/**
 * Every row of §11, one Worker at a time: for each shard count, local D1 and then each simulated
 * service time; first, the check that one simulated writer per database is what the rows get.
 * @param {{ root: string, appDir: string, workDir: string, fake: { baseUrl: string }, log: (line: string) => void, quick: boolean }} o
 */
export async function runShardPhase({ root, appDir, workDir, fake, log, quick }) {
  const conversations = quick ? 32 : 128;
  const appends = quick ? 600 : 4_000;
  const started = performance.now();
  log(`[shards] ${SHARD_COUNTS.join(", ")} shards × (local D1, ${SIMULATED_MODES.map((ms) => `simulated ${ms} ms/statement`).join(", ")}): ${appends} single-source appends over ${conversations} conversations, one client each, per row`);
  /** @type {Record<string, any>[]} */
  const rows = [];
  /** @type {Record<string, any> | undefined} */
  let check;
  for (const shards of SHARD_COUNTS) {
    const template = shardTemplate({ root, appDir, workDir, shards });
    if (shards === 1) check = await isolateCheck({ root, workDir, fake, log, template });
    for (const statementMs of [0, ...SIMULATED_MODES]) rows.push(await measureRow({ root, workDir, fake, log, template, shards, statementMs, conversations, appends }));
  }
  return {
    conversations,
    appendsPerRow: appends,
    warmAppendsPerConversation: WARM_APPENDS,
    policy: SHARD_POLICY,
    simulatedStatementMs: SIMULATED_MODES,
    isolateCheck: check,
    rows,
    seconds: round((performance.now() - started) / 1000, 1),
  };
}
