#!/usr/bin/env node
// `npm run bench [-- --source head] [-- --quick]`: Foldline's performance, measured on the real
// Worker in local workerd (`wrangler dev`) beside the alternatives it replaces, in a few minutes on
// a 2-core machine. Writes bench/results/latest.md and latest.json.
//
// Absolute times are this machine's (client, wrangler, workerd and the fake model share its cores).
// Ratios compare measurements taken in the same run, against the same process and database, and
// are what the targets are about. Nothing here asserts a time: the test suite has no timed tests.
//
// Design notes:
// - The three append points (0 / 200k / 2M characters of history) and the three context points
//   (50k / 200k / 2M) are measured in interleaved rounds after every history is built, so they
//   share one process state and one database size; only the conversation's length differs.
// - Latency probes never cross a compaction trigger (see `ensureHeadroom`), so a sample is an
//   append, not an append plus planning, at every history length alike.
// - The compactor is a loopback OpenAI-compatible server (test/fake-openai/server.ts, the tests' own fake) that answers at
//   once and counts the characters of every request: compactor input is measured at the model's edge.
import "../scripts/offline-env.mjs";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, platform, release, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Api, LogFollower, sleep, waitForCatchUp } from "./lib/api.mjs";
import { groupStream, probeEvent, userChars } from "./lib/conversation.mjs";
import { startFakeOpenAi } from "../test/fake-openai/server.ts";
import { renderMarkdown } from "./lib/report.mjs";
import { runCostPhase } from "./lib/cost-phase.mjs";
import { runLocomoPhase } from "./lib/locomo-phase.mjs";
import { locomoTotalsTable } from "./lib/locomo-report.mjs";
import { runMemoryPhase } from "./lib/memory-phase.mjs";
import { runShardPhase } from "./lib/shard-phase.mjs";
import { latencySummary, max, mean, percentile, round, roundSummary } from "./lib/stats.mjs";
import { WorkerError, applyMigrations, createToken, freePort, snapshotApp, startWorker, writeEnvFile } from "../scripts/lib/worker.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const { values: args } = parseArgs({
  options: {
    source: { type: "string", default: "worktree" },
    quick: { type: "boolean", default: false },
    // The prefix-stability conversation's length in groups (§7), e.g. to see compactions in flight in a --quick run.
    "prefix-groups": { type: "string" },
    out: { type: "string", default: "bench/results" },
    keep: { type: "boolean", default: false },
    // The sections on Workers of their own: `memory` runs only §9 and §10 and writes results/memory.{md,json};
    // `shards` runs only §11 and writes results/shards.{md,json}; `locomo` runs only §12 (LoCoMo, which
    // runs only when asked for) and writes results/locomo.{md,json}.
    only: { type: "string" },
  },
});
if (args.only !== undefined && args.only !== "memory" && args.only !== "shards" && args.only !== "locomo") {
  console.error("--only: memory (§9 and §10), shards (§11) or locomo (§12), the sections that run on Workers of their own");
  process.exit(2);
}
if (args.source !== "worktree" && args.source !== "head") {
  console.error("--source: worktree (default: the files as they are now) or head (the committed HEAD)");
  process.exit(2);
}
/** @type {"worktree" | "head"} */
const SOURCE = args.source;

// Sizes. --quick is a smoke run of the same code path (smaller histories, fewer samples); its
// numbers are not the benchmark's and its report says so.
const SIZE = args.quick
  ? { small: 50_000, mid: 200_000, big: 400_000, appendSamples: 50, contextSamples: 20, parallel: 10, parallelEach: 10, prefixGroups: 120, dupChars: 30_000, warmContexts: 5, meteredContexts: 5, meteredAppends: 5 }
  : { small: 50_000, mid: 200_000, big: 2_000_000, appendSamples: 1000, contextSamples: 400, parallel: 50, parallelEach: 10, prefixGroups: 300, dupChars: 80_000, warmContexts: 20, meteredContexts: 20, meteredAppends: 20 };

if (args["prefix-groups"] !== undefined) {
  const groups = Number(args["prefix-groups"]);
  if (!Number.isInteger(groups) || groups < 2) {
    console.error("--prefix-groups: a whole number of groups, at least 2");
    process.exit(2);
  }
  SIZE.prefixGroups = groups;
}

/** 2000000 → "2M", 200000 → "200k". @param {number} chars */
const short = (chars) => (chars >= 1_000_000 ? `${chars / 1_000_000}M` : chars >= 1_000 ? `${chars / 1_000}k` : String(chars));

const DEFAULT_POLICY = { trigger: 80_000, retain: 40_000, maxSummaryChars: 8_000 };
const DUP_POLICY = { triggerInputChars: 8_000, retainInputChars: 4_000, maxFrozenChars: 8_000 };
/** Appends per batch request: 33 groups of source + proposal + delivery (the API allows 100). */
const GROUPS_PER_BATCH = 33;
const PROBE_FILLER = "shuttle at 9?";
const FAKE_SUMMARY_CHARS = 1_600;

const started = performance.now();
/** @param {string} line */
function log(line) {
  const seconds = ((performance.now() - started) / 1000).toFixed(1).padStart(6);
  console.log(`[${seconds}s] ${line}`);
}
const fmt = (/** @type {number} */ n) => Math.round(n).toLocaleString("en-US");

/** Everything the report is made of. */
const results = /** @type {Record<string, any>} */ ({ only: args.only, metrics: {}, errors: [] });

// ---------------------------------------------------------------------------------------------
// Conversation bookkeeping: what was appended, with the sequence numbers Foldline assigned, so the
// baselines can be computed on exactly the replay that was sent.

class Ledger {
  constructor() {
    /** @type {{ seq: number, userChars: number, replyChars: number }[]} one entry per source, in order */
    this.sources = [];
    this.chars = 0;
    this.groups = 0;
  }

  /** @param {number} seq @param {number} user @param {number} reply */
  add(seq, user, reply) {
    this.sources.push({ seq, userChars: user, replyChars: reply });
    this.chars += user + reply;
    if (reply > 0) this.groups += 1;
  }

  /** Conversation characters of every group whose source seq is ≤ `seq`. */
  charsThrough(/** @type {number} */ seq) {
    let total = 0;
    for (const s of this.sources) {
      if (s.seq > seq) break;
      total += s.userChars + s.replyChars;
    }
    return total;
  }
}

/**
 * Appends groups in batches until the conversation has at least `targetChars`.
 * @param {Api} api @param {string} conversation @param {ReturnType<typeof groupStream>} stream @param {Ledger} ledger
 * @param {number} targetChars @param {(batch: number) => Promise<void>} [afterBatch]
 */
async function ingest(api, conversation, stream, ledger, targetChars, afterBatch) {
  let batch = 0;
  while (ledger.chars < targetChars) {
    const groups = [];
    let chars = ledger.chars;
    while (groups.length < GROUPS_PER_BATCH && chars < targetChars) {
      const group = stream.next();
      groups.push(group);
      chars += group.chars;
    }
    const response = (await api.appendBatch(conversation, groups.flatMap((g) => g.events))).json();
    const seqs = response.results.filter((/** @type {any} */ r) => r.event.kind === "source").map((/** @type {any} */ r) => r.event.seq);
    groups.forEach((group, i) => ledger.add(seqs[i], userChars(group.question), group.answer.length));
    batch += 1;
    if (afterBatch !== undefined) await afterBatch(batch);
  }
}

/**
 * Makes room for `needChars` of probes below the trigger: if the active context is too close to
 * it, appends whole groups until a compaction is planned, then waits for the chain to catch up
 * (the tail is cut back to ≤ retainInputChars). Probes then measure appends, never planning.
 * @param {{ api: Api, follower: LogFollower, conversation: string, agentId: string, stream: ReturnType<typeof groupStream>, ledger: Ledger, needChars: number }} o
 */
async function ensureHeadroom({ api, follower, conversation, agentId, stream, ledger, needChars }) {
  for (let attempt = 0; attempt < 4; attempt++) {
    const context = await waitForCatchUp({ api, follower, agentId, trigger: DEFAULT_POLICY.trigger, onWait: (s) => log(`  waiting for ${conversation}: ${s}`) });
    const active = context.manifest.totals.chars + context.manifest.omitted.chars;
    if (active + needChars < DEFAULT_POLICY.trigger) return active;
    const planned = follower.plannedRuns().length;
    while (follower.plannedRuns().length === planned) {
      const group = stream.next();
      const response = (await api.appendBatch(conversation, group.events)).json();
      ledger.add(response.results[0].event.seq, userChars(group.question), group.answer.length);
      await follower.poll();
    }
  }
  throw new Error(`could not make ${needChars} characters of headroom below the trigger in ${conversation}`);
}

/**
 * One single-source append (`POST …/events`), timed; returns its latency in ms.
 * @param {Api} api @param {string} conversation @param {Ledger} ledger @param {string} label
 */
async function probeAppend(api, conversation, ledger, label) {
  const key = `probe-${label}-${ledger.sources.length}`;
  const text = `${PROBE_FILLER} (${label} ${ledger.sources.length})`;
  const response = await api.appendOne(conversation, probeEvent(key, text));
  if (response.status !== 201) throw new Error(`probe append to ${conversation} answered ${response.status}: ${response.text.slice(0, 300)}`);
  ledger.add(response.json().event.seq, userChars(text), 0);
  return response.ms;
}

/**
 * p99 of the first and second half of a point's samples (in time order): how far p99 moves within
 * one point with nothing changed but time, i.e. the noise floor the ratios should be read against.
 * @param {number[]} samples
 */
function halves(samples) {
  const mid = Math.floor(samples.length / 2);
  return { firstHalfP99: round(percentile(samples.slice(0, mid), 99), 1), secondHalfP99: round(percentile(samples.slice(mid), 99), 1) };
}

/** Consecutive thirds of the round-robin samples: three repetitions of the measurement, in time order. */
const REPETITIONS = 3;

/**
 * A target's ratio (`numerator` point ÷ `denominator` point) in each repetition: the samples of
 * both points split into the same consecutive slices (taken round-robin, so a slice of one point
 * is measured at the same time as the same slice of the other), with each slice's p50 and p99
 * ratio, and their median, min and max. The verdict is the median's; the spread says whether
 * it can be trusted (`report.mjs`).
 * @param {number[]} numerator @param {number[]} denominator
 */
function repetitions(numerator, denominator) {
  const slice = (/** @type {number[]} */ samples, /** @type {number} */ i) => samples.slice(Math.floor((samples.length * i) / REPETITIONS), Math.floor((samples.length * (i + 1)) / REPETITIONS));
  const reps = Array.from({ length: REPETITIONS }, (_, i) => {
    const top = slice(numerator, i);
    const bottom = slice(denominator, i);
    return { n: top.length, p50Ratio: round(percentile(top, 50) / percentile(bottom, 50), 3), p99Ratio: round(percentile(top, 99) / percentile(bottom, 99), 3) };
  });
  const spread = (/** @type {number[]} */ values) => {
    const sorted = [...values].sort((x, y) => x - y);
    return { median: sorted[Math.floor(sorted.length / 2)] ?? NaN, min: sorted[0] ?? NaN, max: sorted.at(-1) ?? NaN };
  };
  return { reps, p50: spread(reps.map((r) => r.p50Ratio)), p99: spread(reps.map((r) => r.p99Ratio)) };
}

/** @param {any} context a context response body */
function contextShape(context) {
  const m = context.manifest;
  return {
    boundary: m.boundary === null ? null : { position: m.boundary.position, envelopeChars: m.boundary.envelopeChars },
    totalsChars: m.totals.chars,
    messages: m.totals.messages,
    tailTurns: m.tail.turns,
    omittedGroups: m.omitted.groups,
  };
}

/** Longest common prefix of two strings. @param {string} a @param {string} b */
function commonPrefix(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/**
 * How much of `current` a provider prompt cache keyed on `previous` could serve: whole identical
 * messages, then the common prefix of the first differing message's content (same role only).
 * @param {{ role: string, content: string }[]} previous @param {{ role: string, content: string }[]} current
 */
function prefixReuse(previous, current) {
  let common = 0;
  let whole = true;
  for (let i = 0; i < previous.length; i++) {
    const a = previous[i];
    const b = current[i];
    if (a === undefined) break;
    if (b === undefined || a.role !== b.role || a.content !== b.content) {
      whole = false;
      if (b !== undefined && a.role === b.role) common += commonPrefix(a.content, b.content);
      break;
    }
    common += a.content.length;
  }
  const total = current.reduce((n, m) => n + m.content.length, 0);
  return { extendsPrevious: whole && current.length >= previous.length, common, total };
}

/** Lags (planned → completed, by the events' recordedAt) of every settled run. @param {LogFollower} follower */
function runLags(follower) {
  return follower
    .plannedRuns()
    .filter((r) => r.completed !== undefined)
    .map((r) => r.completed.recordedAt - r.planned.recordedAt);
}

/** @param {() => Promise<void>} body @param {string} metric */
async function phase(metric, body) {
  try {
    await body();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log(`!! ${metric} failed: ${message}`);
    results.errors.push({ metric, message });
    if (error instanceof WorkerError) throw error;
  }
}

function gitInfo() {
  const git = (/** @type {string[]} */ a) => {
    try {
      return execFileSync("git", a, { cwd: ROOT, encoding: "utf8" }).trim();
    } catch {
      return null;
    }
  };
  const dirty = (git(["status", "--porcelain", "--", "src", "migrations", "wrangler.toml", "package.json"]) ?? "").split("\n").filter((l) => l !== "");
  return { commit: git(["rev-parse", "HEAD"]), subject: git(["log", "-1", "--format=%s"]), dirtyWorkerFiles: dirty.length };
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const work = mkdtempSync(join(tmpdir(), "foldline-bench-"));
  const appDir = join(work, "app");
  const persistDir = join(work, "state");
  const envFile = join(work, "bench.env");
  const logPath = join(work, "wrangler.log");
  const git = gitInfo();
  const wranglerVersion = JSON.parse(readFileSync(join(ROOT, "node_modules", "wrangler", "package.json"), "utf8")).version;
  results.environment = {
    date: new Date().toISOString(),
    machine: { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length, memoryGiB: round(totalmem() / 2 ** 30, 1), os: `${platform()} ${release()}` },
    // Other work on the machine shares the cores with the bench: the load average says how much.
    loadAverageAtStart: loadavg().map((v) => round(v, 2)),
    node: process.version,
    wrangler: wranglerVersion,
    source: SOURCE,
    git,
    quick: args.quick,
    compactor: [
      args.only === undefined ? `§1–8: loopback OpenAI-compatible fake (answers at once, summary ≤ ${FAKE_SUMMARY_CHARS} chars, counts request characters), not the offline extractive compactor` : null,
      args.only === undefined || args.only === "memory" ? "§9: the offline extractive compactor, on a Worker of its own with no model key" : null,
      args.only === undefined || args.only === "shards" ? "§11: none runs (each row's trigger is 2,000,000 characters; no key either)" : null,
      args.only === "locomo" ? "§12: the offline extractive compactor and the offline extractor, on a Worker of its own with no model key" : null,
    ]
      .filter((part) => part !== null)
      .join("; "),
    workDir: work,
  };
  log(`work directory ${work} (source: ${SOURCE === "head" ? `HEAD ${git.commit?.slice(0, 12)}` : `working tree at ${git.commit?.slice(0, 12)}, ${git.dirtyWorkerFiles} modified Worker file(s)`})`);

  snapshotApp(ROOT, appDir, SOURCE);

  const fake = await startFakeOpenAi({ summaryChars: FAKE_SUMMARY_CHARS });
  try {
    if (args.only === undefined) await runMainWorker(appDir, persistDir, envFile, logPath, fake);
    // §9 runs last, on a Worker of its own with no model key (the offline compactor and extractor),
    // after the main Worker has stopped, so the two never share the cores.
    results.started = true;
    // §12 (LoCoMo) only when asked for: a real data set under its own licence, and 10–20 minutes of recall calls.
    if (args.only === "locomo") {
      await phase("locomo", async () => {
        results.metrics.locomo = await runLocomoPhase({ root: ROOT, appDir, workDir: work, fake, log, quick: args.quick });
        log(`[locomo] totals\n${locomoTotalsTable(results.metrics.locomo)}`);
      });
    }
    if (args.only === undefined || args.only === "memory") {
      await phase("memory", async () => {
        results.metrics.memory = await runMemoryPhase({ root: ROOT, appDir, workDir: work, fake, log, quick: args.quick });
      });
      // §10 on a third Worker of its own, so its usage ledger holds only the cost run's appends.
      await phase("cost", async () => {
        results.metrics.cost = await runCostPhase({ root: ROOT, appDir, workDir: work, fake, log, quick: args.quick });
      });
    }
    // §11 last, one Worker per row (1, 2 and 4 shards, local D1 and simulated), one at a time.
    if (args.only === undefined || args.only === "shards") {
      await phase("shards", async () => {
        results.metrics.shards = await runShardPhase({ root: ROOT, appDir, workDir: work, fake, log, quick: args.quick });
      });
    }
  } finally {
    await fake.close(); // nothing else may keep the process alive after a failure
  }
  results.durationSeconds = round((performance.now() - started) / 1000, 1);
  results.environment.loadAverageAtEnd = loadavg().map((v) => round(v, 2));
  // Keep the state (D1, R2, wrangler.log) for a look when something failed, or when asked to.
  if (!args.keep && results.errors.length === 0) rmSync(work, { recursive: true, force: true });
  else log(`kept ${work} (wrangler.log, persisted state)`);
}

/**
 * Sections 1–8: the Worker the fake model compacts for, on its own fresh state, started and stopped here.
 * @param {string} appDir @param {string} persistDir @param {string} envFile @param {string} logPath
 * @param {Awaited<ReturnType<typeof startFakeOpenAi>>} fake
 */
async function runMainWorker(appDir, persistDir, envFile, logPath, fake) {
  log("applying migrations to a fresh local D1");
  applyMigrations(ROOT, appDir, persistDir);
  const token = createToken(ROOT, appDir, persistDir, ["api:*", "agent:*"], "bench");
  // The fake model is the only provider: a real key in .dev.vars is never read (see scripts/lib/worker.mjs).
  await writeEnvFile(envFile, {
    OPENAI_API_KEY: "bench-not-a-real-key",
    OPENAI_BASE_URL: fake.baseUrl,
    COMPACTION_RETRY_BASE_SECONDS: "0",
    COMPACTION_BACKOFF_BASE_SECONDS: "1",
    // Lets §3's metered pass ask what each context call read from D1 (only requests that ask pay).
    D1_METER: "on",
  });
  const port = await freePort(8791);
  const workerOptions = { root: ROOT, appDir, persistDir, envFile, port, logPath, log };
  /** @type {import("../scripts/lib/worker.mjs").RunningWorker} */
  let worker = await startWorker(workerOptions);
  results.started = true;
  const api = new Api(worker.url, token);
  try {
    await runMetrics(api, fake, () => worker, async () => {
      await worker.stop();
      worker = await startWorker(workerOptions);
      return worker;
    });
  } finally {
    await worker.stop();
    log("wrangler stopped");
  }
}

/**
 * @param {Api} api
 * @param {Awaited<ReturnType<typeof startFakeOpenAi>>} fake
 * @param {() => import("../scripts/lib/worker.mjs").RunningWorker} current
 * @param {() => Promise<import("../scripts/lib/worker.mjs").RunningWorker>} restart
 */
async function runMetrics(api, fake, current, restart) {
  const C = (/** @type {string} */ name) => `api:bench:${name}`;
  const agents = {
    zero: { id: "b-zero", conversation: C("zero") },
    small: { id: "b-small", conversation: C("small") },
    mid: { id: "b-mid", conversation: C("mid") },
    big: { id: "b-big", conversation: C("big") },
    prefix: { id: "b-prefix", conversation: C("prefix") },
    dup: { id: "b-dup", conversation: C("dup") },
    meter: { id: "b-meter", conversation: C("meter") },
  };
  // One agent/compactor pair per scenario, each serving only its own conversation (a pair whose
  // sources matched every conversation would preflight all of them). Each has its own model
  // name, so the fake model attributes every request to its scenario.
  for (const [name, a] of Object.entries(agents)) {
    await api.registerAgent({
      agentId: a.id,
      sources: [a.conversation],
      model: name === "dup" ? "bench-flaky" : `bench-${name}`,
      policy: name === "dup" ? DUP_POLICY : {},
    });
  }
  const parallelAgent = "b-par";
  await api.registerAgent({ agentId: parallelAgent, sources: [C("par:*")], model: "bench-par" });
  log(`registered ${Object.keys(agents).length + 1} agent/compactor pairs (default policy 80,000 / 40,000 except b-dup)`);

  const ledgers = Object.fromEntries(Object.keys(agents).map((k) => [k, new Ledger()]));
  const streams = Object.fromEntries(Object.entries(agents).map(([k, a], i) => [k, groupStream({ seed: 1_000 + i, agentId: a.id })]));
  const followers = Object.fromEntries(Object.entries(agents).map(([k, a]) => [k, new LogFollower(api, a.conversation)]));

  // --- 2. D1 per append, measured -----------------------------------------------------------------
  await phase("d1PerAppend", async () => {
    const a = agents.meter;
    const path = `${Api.conversationPath(a.conversation)}/events`;
    // Warm: the object, its chain (activated on the first source) and the declarations are loaded.
    for (let i = 0; i < 3; i++) for (const event of streams.meter.next().events) await api.appendOne(a.conversation, event);
    /** @type {Record<string, Array<Record<string, number>>>} */
    const samples = { source: [], proposal: [], delivery: [], correction: [] };
    for (let i = 0; i < SIZE.meteredAppends; i++) {
      const group = streams.meter.next();
      for (const event of group.events) samples[/** @type {"source" | "proposal" | "delivery"} */ (event.kind)].push((await api.metered("append", [201], "POST", path, event)).d1);
      const source = /** @type {{ body: { messageId: string } }} */ (group.events[0]);
      const correction = { kind: "correction", idempotencyKey: `c-${source.body.messageId}`, body: { action: "edit", targetMessageId: source.body.messageId, text: `${group.question} (edited)` } };
      samples.correction.push((await api.metered("correction", [201], "POST", path, correction)).d1);
    }
    const groups = Array.from({ length: GROUPS_PER_BATCH }, () => streams.meter.next());
    const batch = (await api.metered("batch append", [201], "POST", `${path}/batch`, { events: groups.flatMap((g) => g.events) })).d1;
    const summarize = (/** @type {Array<Record<string, number>>} */ list) => ({
      n: list.length,
      roundTrips: round(mean(list.map((d) => d.roundTrips)), 2),
      roundTripsMax: max(list.map((d) => d.roundTrips)),
      statements: round(mean(list.map((d) => d.statements)), 2),
      rowsRead: round(mean(list.map((d) => d.rowsRead)), 1),
      rowsWritten: round(mean(list.map((d) => d.rowsWritten)), 1),
    });
    // The premise: every sample is below the trigger (no plan, no packet, no queue send).
    await followers.meter.poll();
    const planned = followers.meter.plannedRuns().length;
    results.metrics.d1PerAppend = {
      measured: true,
      perKind: Object.fromEntries(Object.entries(samples).map(([kind, list]) => [kind, summarize(list)])),
      batch: { events: groups.length * 3, sources: groups.length, ...summarize([batch]) },
      plannedRuns: planned,
    };
    const s = results.metrics.d1PerAppend.perKind.source;
    log(`[2 D1 per append] source: ${s.roundTrips} round trips, ${s.statements} statements, ${s.rowsRead} rows read, ${s.rowsWritten} rows written (mean of ${s.n}); batch of ${groups.length * 3}: ${batch.roundTrips} round trips`);
  });

  // --- Histories -------------------------------------------------------------------------------
  const probesPerConversation = SIZE.appendSamples + 5;
  const probeChars = probesPerConversation * (userChars(`${PROBE_FILLER} (2M 99999)`) + 1);
  /** Active context (served chars) of each conversation when its probes start. */
  /** @type {Record<string, number>} */
  const activeBeforeProbes = { zero: 0 };
  /** @type {{ batch: number, chars: number, totalsChars: number, omittedChars: number, omittedGroups: number, at: number }[]} */
  const bigSamples = [];
  let bigIngestSeconds = 0;

  await phase("histories", async () => {
    log(`[histories] ${fmt(SIZE.small)} chars into ${agents.small.conversation}`);
    await ingest(api, agents.small.conversation, streams.small, ledgers.small, SIZE.small);
    log(`[histories] ${fmt(SIZE.mid)} chars into ${agents.mid.conversation}`);
    await ingest(api, agents.mid.conversation, streams.mid, ledgers.mid, SIZE.mid);
    log(`[histories] ${fmt(SIZE.big)} chars into ${agents.big.conversation} (a context call after every batch of ${GROUPS_PER_BATCH} groups)`);
    const t0 = performance.now();
    await ingest(api, agents.big.conversation, streams.big, ledgers.big, SIZE.big, async (batch) => {
      const context = (await api.context(agents.big.conversation, agents.big.id)).json();
      const m = context.manifest;
      bigSamples.push({ batch, chars: ledgers.big.chars, totalsChars: m.totals.chars, omittedChars: m.omitted.chars, omittedGroups: m.omitted.groups, at: Date.now() });
      if (batch % 25 === 0) log(`  ${fmt(ledgers.big.chars)} chars appended, served context ${fmt(m.totals.chars)} chars, ${fake.calls.filter((c) => c.model === "bench-big" && c.process === "compactor").length} compactor calls`);
    });
    bigIngestSeconds = (performance.now() - t0) / 1000;
    log(`[histories] appended ${fmt(ledgers.big.chars)} chars in ${bigIngestSeconds.toFixed(1)} s; waiting for compaction to catch up`);
    for (const key of ["small", "mid", "big"]) {
      const a = agents[/** @type {"small" | "mid" | "big"} */ (key)];
      activeBeforeProbes[key] = await ensureHeadroom({ api, follower: followers[key], conversation: a.conversation, agentId: a.id, stream: streams[key], ledger: ledgers[key], needChars: probeChars });
    }
    log(`[histories] caught up: ${followers.big.plannedRuns().length} compactions on the ${short(SIZE.big)} conversation, ${followers.mid.plannedRuns().length} on the ${short(SIZE.mid)} one`);
  });

  // --- 3. Context selection latency (before the append probes, which add hundreds of one-turn
  // groups to the windows and would push the served context into the agent's maxMessages) --------
  await phase("contextLatency", async () => {
    const points = [
      { key: "small", label: short(SIZE.small) },
      { key: "mid", label: short(SIZE.mid) },
      { key: "big", label: short(SIZE.big) },
    ];
    /** @type {Record<string, { latencies: number[], bytes: number[], shape: ReturnType<typeof contextShape> | null }>} */
    const data = {};
    for (const p of points) {
      data[p.label] = { latencies: [], bytes: [], shape: null };
      for (let i = 0; i < 3; i++) await api.context(agents[p.key].conversation, agents[p.key].id); // warm-up
    }
    log(`[3 context latency] ${SIZE.contextSamples} GET …/context per conversation, round-robin over the three, one at a time`);
    for (let i = 0; i < SIZE.contextSamples; i++) {
      for (const p of points) {
        const response = await api.context(agents[p.key].conversation, agents[p.key].id);
        data[p.label].latencies.push(response.ms);
        data[p.label].bytes.push(response.bytes);
        data[p.label].shape = contextShape(response.json());
      }
    }
    // What selection reads: a separate pass with the D1 meter asked for (after the timed samples,
    // so none of them paid for it). The Worker's share (the token) and the object's (declaration,
    // head rows, tail) are both in it.
    /** @type {Record<string, { statements: number, rowsRead: number, bytesRead: number, bytes: number }>} */
    const reads = {};
    for (const p of points) {
      const samples = [];
      for (let i = 0; i < SIZE.meteredContexts; i++) samples.push(await api.contextReads(agents[p.key].conversation, agents[p.key].id));
      const avg = (/** @type {(s: typeof samples[number]) => number} */ pick) => mean(samples.map(pick));
      reads[p.key] = { statements: avg((s) => s.statements), rowsRead: avg((s) => s.rowsRead), bytesRead: avg((s) => s.bytesRead), bytes: avg((s) => s.bytes) };
    }
    const readsOf = (/** @type {string} */ key) => {
      const r = reads[key];
      return {
        d1Statements: round(r.statements, 1),
        d1RowsRead: round(r.rowsRead, 1),
        d1BytesRead: round(r.bytesRead, 0),
        d1RowsReadPerKiBReturned: round(r.rowsRead / (r.bytes / 1024), 2),
        d1BytesReadPerByteReturned: round(r.bytesRead / r.bytes, 3),
      };
    };
    const summary = Object.fromEntries(
      points.map((p) => [p.key, { label: p.label, historyChars: ledgers[p.key].chars, ...roundSummary(latencySummary(data[p.label].latencies)), ...halves(data[p.label].latencies), bytes: round(mean(data[p.label].bytes), 0), ...data[p.label].shape, ...readsOf(p.key) }]),
    );
    results.metrics.contextLatency = {
      points: summary,
      p50RatioBigToSmall: round(summary.big.p50 / summary.small.p50, 3),
      p99RatioBigToSmall: round(summary.big.p99 / summary.small.p99, 3),
      repetitions: repetitions(data[short(SIZE.big)].latencies, data[short(SIZE.small)].latencies),
    };
    for (const p of points) {
      const q = summary[p.key];
      log(`  at ${p.label}: p50 ${q.p50} ms, p99 ${q.p99} ms, ${fmt(q.bytes)} bytes; D1: ${q.d1Statements} statements, ${q.d1RowsRead} rows and ${fmt(q.d1BytesRead)} bytes read (${q.d1BytesReadPerByteReturned} bytes read per byte returned)`);
    }
  });

  // --- 1. Append latency -----------------------------------------------------------------------
  await phase("appendLatency", async () => {
    const points = [
      { key: "zero", label: "0" },
      { key: "mid", label: short(SIZE.mid) },
      { key: "big", label: short(SIZE.big) },
    ];
    /** @type {Record<string, { latencies: number[], historyChars: number }>} */
    const data = {};
    for (const p of points) {
      data[p.label] = { latencies: [], historyChars: ledgers[p.key].chars };
      for (let i = 0; i < 5; i++) await probeAppend(api, agents[p.key].conversation, ledgers[p.key], `${p.label}-warm`); // warm-up, not counted
    }
    // Round-robin, one append at a time: whatever else the machine does at any moment lands on the
    // three history sizes alike, so their ratio is not an artefact of when each was measured.
    log(`[1 append latency] ${SIZE.appendSamples} single-source appends per conversation, round-robin over the three, one at a time`);
    for (let i = 0; i < SIZE.appendSamples; i++) {
      for (const p of points) data[p.label].latencies.push(await probeAppend(api, agents[p.key].conversation, ledgers[p.key], p.label));
    }
    // Nothing was planned during the probes (headroom), which the log can confirm.
    const planning = {};
    for (const p of points) {
      await followers[p.key].poll();
      planning[p.label] = followers[p.key].openRuns().length;
    }
    // Keyed by role (zero / mid / big); `label` is the history size.
    const summary = Object.fromEntries(
      points.map((p) => {
        const d = data[p.label];
        const sustained = (d.latencies.length / d.latencies.reduce((a, b) => a + b, 0)) * 1000;
        return [p.key, { label: p.label, historyChars: d.historyChars, activeCharsBefore: activeBeforeProbes[p.key] ?? null, ...roundSummary(latencySummary(d.latencies)), appendsPerSecond: round(sustained, 1), ...halves(d.latencies) }];
      }),
    );
    results.metrics.appendLatency = {
      points: summary,
      p99RatioBigToZero: round(summary.big.p99 / summary.zero.p99, 3),
      p50RatioBigToZero: round(summary.big.p50 / summary.zero.p50, 3),
      p99RatioBigToMid: round(summary.big.p99 / summary.mid.p99, 3),
      p50RatioBigToMid: round(summary.big.p50 / summary.mid.p50, 3),
      openRunsAfterProbes: planning,
      repetitions: repetitions(data[short(SIZE.big)].latencies, data["0"].latencies),
    };
    for (const p of points) log(`  at ${p.label}: p50 ${summary[p.key].p50} ms, p99 ${summary[p.key].p99} ms, ${summary[p.key].appendsPerSecond} appends/s`);
  });

  await phase("parallelAppends", async () => {
    const n = SIZE.parallel;
    const conversations = Array.from({ length: n }, (_, i) => C(`par:${i}`));
    log(`[1 parallel] ${n} conversations × ${SIZE.parallelEach} sequential appends each, all at once`);
    // Warm-up: each conversation's first append creates its object and activation (not counted).
    await Promise.all(conversations.map((c) => api.appendOne(c, probeEvent(`par-warm-${c}`, `${PROBE_FILLER} (warm)`))));
    /** @type {number[]} */
    const latencies = [];
    let failures = 0;
    const t0 = performance.now();
    await Promise.all(
      conversations.map(async (c) => {
        for (let i = 0; i < SIZE.parallelEach; i++) {
          const response = await api.appendOne(c, probeEvent(`par-${c}-${i}`, `${PROBE_FILLER} (${i})`));
          if (response.status !== 201) failures += 1;
          latencies.push(response.ms);
        }
      }),
    );
    const wallMs = performance.now() - t0;
    results.metrics.parallelAppends = {
      conversations: n,
      appendsEach: SIZE.parallelEach,
      appends: latencies.length,
      failures,
      wallSeconds: round(wallMs / 1000, 2),
      aggregateAppendsPerSecond: round((latencies.length / wallMs) * 1000, 1),
      latency: roundSummary(latencySummary(latencies)),
    };
    log(`  ${results.metrics.parallelAppends.aggregateAppendsPerSecond} appends/s aggregate, p50 ${results.metrics.parallelAppends.latency.p50} ms, p99 ${results.metrics.parallelAppends.latency.p99} ms`);
  });

  // --- 4 and 6 on the 2M replay ----------------------------------------------------------------------
  await phase("compactorInput", async () => {
    const follower = followers.big;
    await follower.poll();
    const ledger = ledgers.big;
    const runs = follower.plannedRuns().sort((a, b) => a.planned.seq - b.planned.seq);
    const calls = fake.calls.filter((c) => c.model === "bench-big" && c.process === "compactor");
    const ok = calls.filter((c) => c.status === 200);
    const sum = (/** @type {number[]} */ v) => v.reduce((a, b) => a + b, 0);
    const input = sum(calls.map((c) => c.totalChars));
    const systemChars = ok[0]?.systemChars ?? 0;
    const frozenChars = sum(runs.map((r) => r.planned.detail.frozenChars));
    const sliceChars = sum(ok.map((c) => c.sliceChars));
    const previousBoundaryChars = sum(ok.map((c) => c.previousBoundaryChars));
    const completed = runs.filter((r) => r.completed !== undefined);
    const coveredThrough = Math.max(0, ...completed.map((r) => r.completed.detail.coveredThroughSeq));

    // Baseline A: at every trigger, re-summarize the whole history up to the same coverage point
    // (native characters, no markup, plus the same system prompt: generous to the baseline).
    const resummarize = sum(runs.map((r) => systemChars + ledger.charsThrough(r.planned.detail.throughSeq)));
    // Baseline B: no compaction; before every reply the model reads the whole history so far.
    let before = 0;
    let noCompaction = 0;
    let replies = 0;
    for (const s of ledger.sources) {
      if (s.replyChars > 0) {
        noCompaction += before + s.userChars;
        replies += 1;
      }
      before += s.userChars + s.replyChars;
    }
    // Foldline: what the agent is served when it replies, as preflight measured it for that source.
    const activeBySource = new Map(follower.preflights.map((p) => [p.sourceSeq, p.activeChars]));
    for (const r of runs) activeBySource.set(r.planned.detail.triggerSeq, r.planned.detail.activeChars);
    const served = ledger.sources.filter((s) => s.replyChars > 0).map((s) => activeBySource.get(s.seq)).filter((v) => v !== undefined);
    // Worst case: every previous boundary at the policy's maxSummaryChars instead of the fake's size.
    const worstCase = input + sum(ok.filter((c) => c.previousBoundaryChars > 0).map((c) => DEFAULT_POLICY.maxSummaryChars - c.previousBoundaryChars));

    results.metrics.compactorInput = {
      conversationChars: ledger.chars,
      replies,
      compactions: runs.length,
      modelRequests: calls.length,
      // The memory extraction after each settled compaction, on the same model: its own cost.
      extractionRequests: fake.calls.filter((c) => c.model === "bench-big" && c.process === "extractor").length,
      extractionInputChars: sum(fake.calls.filter((c) => c.model === "bench-big" && c.process === "extractor").map((c) => c.totalChars)),
      coveredChars: ledger.charsThrough(coveredThrough),
      compactorInputChars: input,
      ratio: round(input / ledger.chars, 3),
      ratioPerCoveredChar: round(input / ledger.charsThrough(coveredThrough), 3),
      ifSummariesAtMaxChars: worstCase,
      maxSummaryChars: DEFAULT_POLICY.maxSummaryChars,
      fakeSummaryChars: FAKE_SUMMARY_CHARS,
      ratioIfSummariesAtMax: round(worstCase / ledger.chars, 3),
      breakdown: {
        systemPromptChars: sum(ok.map((c) => c.systemChars)),
        previousBoundaryChars,
        sliceChars,
        frozenNativeChars: frozenChars,
        sliceMarkupOverhead: round(sliceChars / frozenChars - 1, 3),
        otherFramingChars: sum(ok.map((c) => c.userChars - c.sliceChars - c.previousBoundaryChars - c.amendmentsChars - c.pagesChars)),
      },
      baselines: {
        resummarizeWholeHistoryChars: resummarize,
        resummarizeRatio: round(resummarize / ledger.chars, 2),
        noCompactionModelInputChars: noCompaction,
        noCompactionRatio: round(noCompaction / ledger.chars, 1),
        noCompactionMeanPerReply: round(noCompaction / replies, 0),
        noCompactionLastReply: before,
        foldlineMeanPerReply: round(mean(served), 0),
        foldlineMaxPerReply: max(served),
        foldlineRepliesMeasured: served.length,
      },
      ingestSeconds: round(bigIngestSeconds, 1),
      ingestCharsPerSecond: round(ledger.chars / bigIngestSeconds, 0),
    };
    log(`[4 compactor input] ${fmt(input)} chars for ${fmt(ledger.chars)} conversation chars: ratio ${results.metrics.compactorInput.ratio}; re-summarize ${results.metrics.compactorInput.baselines.resummarizeRatio}; no compaction ${results.metrics.compactorInput.baselines.noCompactionRatio}`);
  });

  await phase("compactionLag", async () => {
    const follower = followers.big;
    const lags = runLags(follower);
    const inFlight = follower.preflights.filter((p) => p.reason === "compaction_in_flight").map((p) => p.activeChars);
    const allActive = follower.preflights.map((p) => p.activeChars);
    // Context samples taken during the replay, classified by whether a run was open at the time
    // (planned recordedAt ≤ sample time < completed recordedAt).
    const runs = follower.plannedRuns();
    const openAt = (/** @type {number} */ t) => runs.some((r) => r.planned.recordedAt <= t && (r.completed === undefined || t < r.completed.recordedAt));
    const inFlightSamples = bigSamples.filter((s) => openAt(s.at));
    results.metrics.compactionLag = {
      replay: {
        conversation: "2M replay, bulk ingest",
        runs: lags.length,
        lagMs: roundSummary(latencySummary(lags)),
        maxActiveCharsWhileInFlight: max(inFlight),
        maxActiveCharsOverall: max(allActive),
        preflightsWhileInFlight: inFlight.length,
        contextSamples: bigSamples.length,
        contextSamplesWhileInFlight: inFlightSamples.length,
        maxServedCharsWhileInFlight: max(inFlightSamples.map((s) => s.totalsChars)),
        maxOmittedCharsWhileInFlight: max(inFlightSamples.map((s) => s.omittedChars)),
        samplesWithOmittedGroups: bigSamples.filter((s) => s.omittedGroups > 0).length,
        agentMaxChars: 120_000,
      },
    };
    log(`[6 compaction lag] replay: p50 ${results.metrics.compactionLag.replay.lagMs.p50} ms, max ${results.metrics.compactionLag.replay.lagMs.max} ms; largest active context while in flight ${fmt(max(inFlight))} chars`);
  });

  // --- 7. Prompt-prefix stability (and lag at a conversational pace) ---------------------------
  await phase("prefixStability", async () => {
    const a = agents.prefix;
    const follower = followers.prefix;
    log(`[7 prefix stability] ${SIZE.prefixGroups} groups, one GET …/context after each`);
    /** @type {{ role: string, content: string }[] | null} */
    let previous = null;
    let previousBoundary = null;
    const steps = [];
    /** @type {number[]} */
    const latencies = [];
    /** @type {{ at: number, totalsChars: number }[]} */
    const samples = [];
    for (let i = 0; i < SIZE.prefixGroups; i++) {
      const group = streams.prefix.next();
      const response = (await api.appendBatch(a.conversation, group.events)).json();
      ledgers.prefix.add(response.results[0].event.seq, userChars(group.question), group.answer.length);
      const contextResponse = await api.context(a.conversation, a.id);
      latencies.push(contextResponse.ms);
      const context = contextResponse.json();
      const boundary = context.manifest.boundary?.id ?? null;
      const at = Date.now();
      samples.push({ at, totalsChars: context.manifest.totals.chars, omittedGroups: context.manifest.omitted.groups });
      if (previous !== null) {
        const reuse = prefixReuse(previous, context.messages);
        steps.push({ ...reuse, at, boundaryChanged: boundary !== previousBoundary });
      }
      previous = context.messages;
      previousBoundary = boundary;
    }
    await waitForCatchUp({ api, follower, agentId: a.id, trigger: DEFAULT_POLICY.trigger });
    const between = steps.filter((s) => !s.boundaryChanged);
    const sum = (/** @type {number[]} */ v) => v.reduce((x, y) => x + y, 0);
    const runs = follower.plannedRuns();
    const openAt = (/** @type {number} */ t) => runs.some((r) => r.planned.recordedAt <= t && (r.completed === undefined || t < r.completed.recordedAt));
    // Pairs whose second call came while a compaction was planned and not yet settled: how long a
    // run is in flight is timing, so these are reported apart (and should extend like any other).
    const inFlightPairs = between.filter((s) => openAt(s.at));
    results.metrics.prefixStability = {
      responses: steps.length + 1,
      pairs: steps.length,
      pairsAcrossCompaction: steps.length - between.length,
      shareExtendingPrevious: round(steps.filter((s) => s.extendsPrevious).length / steps.length, 4),
      shareExtendingPreviousBetweenCompactions: round(between.filter((s) => s.extendsPrevious).length / between.length, 4),
      cacheableCharShare: round(sum(steps.map((s) => s.common)) / sum(steps.map((s) => s.total)), 4),
      cacheableCharShareBetweenCompactions: round(sum(between.map((s) => s.common)) / sum(between.map((s) => s.total)), 4),
      pairsWhileInFlight: inFlightPairs.length,
      shareExtendingPreviousWhileInFlight: inFlightPairs.length === 0 ? null : round(inFlightPairs.filter((s) => s.extendsPrevious).length / inFlightPairs.length, 4),
      cacheableCharShareWhileInFlight: inFlightPairs.length === 0 ? null : round(sum(inFlightPairs.map((s) => s.common)) / sum(inFlightPairs.map((s) => s.total)), 4),
      samplesWithOmittedGroups: samples.filter((x) => x.omittedGroups > 0).length,
      compactions: runs.length,
      conversationChars: ledgers.prefix.chars,
      servedCharsMean: round(mean(samples.map((x) => x.totalsChars)), 0),
      servedCharsMax: max(samples.map((x) => x.totalsChars)),
      contextLatency: roundSummary(latencySummary(latencies)),
    };
    // Compactor input at a conversational pace: each run freezes about trigger − retain characters,
    // the steady state a long-lived chat converges to (the bulk replay's catch-up runs freeze more).
    const pacedCalls = fake.calls.filter((c) => c.model === "bench-prefix" && c.process === "compactor");
    const pacedCovered = ledgers.prefix.charsThrough(Math.max(0, ...runs.filter((r) => r.completed !== undefined).map((r) => r.completed.detail.coveredThroughSeq)));
    const pacedInput = sum(pacedCalls.map((c) => c.totalChars));
    results.metrics.prefixStability.compactorInput = {
      compactions: runs.length,
      modelRequests: pacedCalls.length,
      inputChars: pacedInput,
      coveredChars: pacedCovered,
      meanFrozenChars: round(mean(runs.map((r) => r.planned.detail.frozenChars)), 0),
      ratioPerCoveredChar: pacedCovered > 0 ? round(pacedInput / pacedCovered, 3) : null,
    };
    const lags = runLags(follower);
    const inFlight = follower.preflights.filter((p) => p.reason === "compaction_in_flight").map((p) => p.activeChars);
    results.metrics.compactionLag = {
      ...results.metrics.compactionLag,
      paced: {
        conversation: "one group, then one context call, at a time (prefix-stability conversation)",
        runs: lags.length,
        lagMs: roundSummary(latencySummary(lags)),
        maxActiveCharsWhileInFlight: max(inFlight),
        preflightsWhileInFlight: inFlight.length,
        maxServedCharsWhileInFlight: max(samples.filter((s) => openAt(s.at)).map((s) => s.totalsChars)),
        maxServedCharsOverall: max(samples.map((s) => s.totalsChars)),
      },
    };
    const m = results.metrics.prefixStability;
    log(`  ${(m.shareExtendingPrevious * 100).toFixed(1)}% of responses extend the previous one (${m.pairsAcrossCompaction} pairs straddle a compaction); ${(m.cacheableCharShare * 100).toFixed(1)}% of characters cacheable`);
    log(`  with a compaction in flight: ${m.pairsWhileInFlight} pairs, ${m.shareExtendingPreviousWhileInFlight === null ? "–" : `${(m.shareExtendingPreviousWhileInFlight * 100).toFixed(1)}%`} extend the previous one; ${m.samplesWithOmittedGroups} responses omitted groups`);
  });

  // --- 5. Duplicates -----------------------------------------------------------------------------
  await phase("duplicates", async () => {
    const a = agents.dup;
    const follower = followers.dup;
    log(`[5 duplicates] ${fmt(SIZE.dupChars)} chars, every batch sent 4× (twice in sequence, then twice concurrently); the model fails every slice's first attempt`);
    const statuses = { created: 0, replayed: 0, other: 0 };
    const duplicateFlags = { fresh: 0, duplicate: 0 };
    const stream = streams.dup;
    while (ledgers.dup.chars < SIZE.dupChars) {
      const groups = Array.from({ length: GROUPS_PER_BATCH }, () => stream.next());
      const events = groups.flatMap((g) => g.events);
      const path = `${Api.conversationPath(a.conversation)}/events/batch`;
      const first = await api.request("POST", path, { events });
      const second = await api.request("POST", path, { events });
      const concurrent = await Promise.all([api.request("POST", path, { events }), api.request("POST", path, { events })]);
      for (const response of [first, second, ...concurrent]) {
        if (response.status === 201) statuses.created += 1;
        else if (response.status === 200) statuses.replayed += 1;
        else statuses.other += 1;
        if (response.status === 200 || response.status === 201) {
          for (const r of response.json().results) duplicateFlags[r.duplicate ? "duplicate" : "fresh"] += 1;
        }
      }
      const seqs = first.json().results.filter((/** @type {any} */ r) => r.event.kind === "source").map((/** @type {any} */ r) => r.event.seq);
      groups.forEach((g, i) => ledgers.dup.add(seqs[i], userChars(g.question), g.answer.length));
    }
    await waitForCatchUp({ api, follower, agentId: a.id, trigger: DUP_POLICY.triggerInputChars, onWait: (s) => log(`  waiting: ${s}`) });
    const chain = await api.chain(a.conversation, a.id);
    const boundaries = chain.boundaries;
    const byPrevious = new Map();
    for (const b of boundaries) {
      const key = `${b.epochId}:${b.previous?.id ?? "(first)"}`;
      byPrevious.set(key, (byPrevious.get(key) ?? 0) + 1);
    }
    const duplicateBoundaries = [...byPrevious.values()].reduce((n, c) => n + (c - 1), 0);
    const runs = follower.plannedRuns();
    const calls = fake.calls.filter((c) => c.model === "bench-flaky" && c.process === "compactor");
    const verifyStarted = performance.now();
    const audit = await api.verify(a.conversation, a.id);
    const verifyMs = performance.now() - verifyStarted;
    const links = audit.epochs.flatMap((/** @type {any} */ e) => e.links);
    results.metrics.duplicates = {
      batches: statuses.created + statuses.replayed + statuses.other,
      statuses,
      eventResults: duplicateFlags,
      storedEvents: follower.kinds,
      groupsSent: ledgers.dup.groups,
      compactionsPlanned: runs.length,
      completedRunEvents: runs.filter((r) => r.completed !== undefined).length,
      failedAttempts: runs.reduce((n, r) => n + r.failed.length, 0),
      modelRequests: calls.length,
      injectedFailures: calls.filter((c) => c.status !== 200).length,
      boundaries: boundaries.length,
      distinctPredecessors: byPrevious.size,
      duplicateBoundaries,
      chainValid: audit.valid,
      linksValid: links.filter((/** @type {any} */ l) => l.valid).length,
      links: links.length,
      verifyMs: round(verifyMs, 0),
    };
    // The 2M chain too: its boundaries and predecessors.
    const bigChain = await api.chain(agents.big.conversation, agents.big.id);
    const bigPrev = new Set(bigChain.boundaries.map((/** @type {any} */ b) => `${b.epochId}:${b.previous?.id ?? "(first)"}`));
    results.metrics.duplicates.bigChain = { boundaries: bigChain.boundaries.length, distinctPredecessors: bigPrev.size, duplicateBoundaries: bigChain.boundaries.length - bigPrev.size };
    const d = results.metrics.duplicates;
    log(`  ${d.boundaries} boundaries, ${d.distinctPredecessors} distinct predecessors → ${d.duplicateBoundaries} duplicates; ${d.injectedFailures} injected model failures retried; chain ${d.chainValid ? "verifies" : "DOES NOT verify"}`);
  });

  // --- 8. Rehydration after a restart ----------------------------------------------------------------
  await phase("rehydration", async () => {
    log("[8 rehydration] restarting wrangler dev on the same persist directory (Durable Objects cannot be evicted from outside)");
    const restartStarted = performance.now();
    const worker = await restart();
    const restartSeconds = (performance.now() - restartStarted) / 1000;
    api.baseUrl = worker.url;
    // Warm the Worker isolate and D1 (the token lookup and a declaration read) without touching
    // any conversation's object, so the first context call below times the object alone.
    await api.expect("healthz", [200], "GET", "/healthz");
    await api.expect("agent", [200], "GET", `/v1/agents/${agents.big.id}`);
    // The first Durable Object calls of a fresh process also initialise the namespace and compile
    // the code paths (with and without a boundary to verify); pay that on two conversations that
    // are not measured: the 0-history one and the prefix-stability one, which has boundaries.
    const namespaceWarmup = await api.context(agents.zero.conversation, agents.zero.id);
    const boundaryPathWarmup = await api.context(agents.prefix.conversation, agents.prefix.id);
    await sleep(500);
    const rssBefore = worker.workerdRssKiB();
    const points = [
      { key: "small", label: short(SIZE.small) },
      { key: "mid", label: short(SIZE.mid) },
      { key: "big", label: short(SIZE.big) },
    ];
    const out = {};
    let rssPrevious = rssBefore;
    for (const p of points) {
      const cold = await api.context(agents[p.key].conversation, agents[p.key].id);
      const rssAfter = worker.workerdRssKiB();
      const warm = [];
      for (let i = 0; i < SIZE.warmContexts; i++) warm.push((await api.context(agents[p.key].conversation, agents[p.key].id)).ms);
      const warmP50 = percentile(warm, 50);
      out[p.key] = {
        label: p.label,
        historyChars: ledgers[p.key].chars,
        firstContextMs: round(cold.ms, 1),
        warmContextP50Ms: round(warmP50, 1),
        rehydrationMs: round(cold.ms - warmP50, 1),
        warmSamples: warm.length,
        workerdRssDeltaKiB: rssAfter === null || rssPrevious === null ? null : rssAfter - rssPrevious,
      };
      rssPrevious = worker.workerdRssKiB();
      log(`  ${p.label}: first context ${out[p.key].firstContextMs} ms, warm p50 ${out[p.key].warmContextP50Ms} ms`);
    }
    results.metrics.rehydration = { restartSeconds: round(restartSeconds, 1), namespaceWarmupMs: round(namespaceWarmup.ms, 1), boundaryPathWarmupMs: round(boundaryPathWarmup.ms, 1), workerdRssAfterWarmupKiB: rssBefore, points: out };
  });

  await phase("verifyBig", async () => {
    const t0 = performance.now();
    const audit = await api.verify(agents.big.conversation, agents.big.id);
    const links = audit.epochs.flatMap((/** @type {any} */ e) => e.links);
    results.metrics.verifyBig = { valid: audit.valid, links: links.length, linksValid: links.filter((/** @type {any} */ l) => l.valid).length, ms: round(performance.now() - t0, 0) };
    log(`[verify] ${short(SIZE.big)} chain: ${results.metrics.verifyBig.linksValid}/${links.length} links valid in ${results.metrics.verifyBig.ms} ms`);

    // The same chain a link per page (`verify/links`): each page reads its own rows, packet,
    // receipt and slice of the log, so its cost should not grow with the link's position.
    /** @type {number[]} */
    const pageMs = [];
    /** @type {any[]} */
    const paged = [];
    for (let after = 0; after !== null; ) {
      const started = performance.now();
      const page = await api.verifyLinks(agents.big.conversation, agents.big.id, after, 1);
      pageMs.push(performance.now() - started);
      paged.push(...page.links);
      after = page.nextAfter;
    }
    const current = audit.epochs.find((/** @type {any} */ e) => e.current)?.links ?? [];
    const half = Math.floor(pageMs.length / 2);
    results.metrics.verifyBig.pages = {
      pages: pageMs.length,
      agreesWithWholeAudit: JSON.stringify(paged) === JSON.stringify(current),
      p50Ms: round(percentile(pageMs, 50), 1),
      maxMs: round(Math.max(...pageMs), 1),
      firstHalfP50Ms: round(percentile(pageMs.slice(0, half), 50), 1),
      secondHalfP50Ms: round(percentile(pageMs.slice(half), 50), 1),
      totalMs: round(pageMs.reduce((a, b) => a + b, 0), 0),
    };
    const pages = results.metrics.verifyBig.pages;
    log(`[verify] one link per page: ${pages.pages} pages, p50 ${pages.p50Ms} ms (first half ${pages.firstHalfP50Ms}, second half ${pages.secondHalfP50Ms}), ${pages.agreesWithWholeAudit ? "the same links as the whole audit" : "DIFFERENT links from the whole audit"}`);
  });
  if (!current().alive()) throw new WorkerError("wrangler dev exited during the run");
}

// ---------------------------------------------------------------------------------------------

try {
  await main();
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`\nbench failed: ${message}`);
  if (results.environment?.workDir !== undefined) console.error(`state and wrangler.log kept in ${results.environment.workDir}`);
  process.exitCode = 1;
  results.errors.push({ metric: "run", message });
}
// A run that got the Worker up writes its report, errors included (a metric that failed says so
// there). A --quick smoke run writes *.tmp files, which .gitignore keeps out of commits.
if (results.started === true) {
  const outDir = resolve(ROOT, args.out);
  mkdirSync(outDir, { recursive: true });
  const name = args.only ?? (args.quick ? "quick" : "latest");
  const [md, json] = args.quick ? [`${name}.md.tmp`, `${name}.json.tmp`] : [`${name}.md`, `${name}.json`];
  delete results.started;
  writeFileSync(join(outDir, json), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(outDir, md), renderMarkdown(results));
  log(`wrote ${join(args.out, md)} and ${json}${results.errors.length > 0 ? ` (with ${results.errors.length} error(s))` : ""}`);
  if (results.errors.length > 0) process.exitCode = 1;
}
