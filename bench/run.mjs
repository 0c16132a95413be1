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
//
// The driver: options, the run's environment, and the order of the Workers. Each section of the
// report is measured by its own module: bench/sections/ for §1–§8 and the chain audit (started by
// lib/main-worker.mjs on one Worker), lib/memory-phase.mjs, lib/cost-phase.mjs, lib/shard-phase.mjs,
// lib/locomo-phase.mjs and lib/scripts-phase.mjs for §9–§12 and §14 on Workers of their own;
// lib/report.mjs writes the report.
import "../scripts/offline-env.mjs";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, platform, release, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startFakeOpenAi } from "../test/fake-openai/server.ts";
import { renderMarkdown } from "./lib/report.mjs";
import { runCostPhase } from "./lib/cost-phase.mjs";
import { runLocomoPhase } from "./lib/locomo-phase.mjs";
import { locomoTotalsTable } from "./lib/locomo-report.mjs";
import { runMainWorker } from "./lib/main-worker.mjs";
import { runMemoryPhase } from "./lib/memory-phase.mjs";
import { runPeerPhase } from "./lib/peer-phase.mjs";
import { FAKE_SUMMARY_CHARS } from "./lib/scenario.mjs";
import { runScalePhase } from "./lib/scale-phase.mjs";
import { runScriptsPhase } from "./lib/scripts-phase.mjs";
import { runShardPhase } from "./lib/shard-phase.mjs";
import { round } from "./lib/stats.mjs";
import { WorkerError, snapshotApp } from "../scripts/lib/worker.mjs";

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
    // runs only when asked for) and writes results/locomo.{md,json}; `scripts` runs only §14 and writes
    // results/scripts.{md,json}; `scale` runs only §13 (which runs only when asked for) and writes
    // results/scale.{md,json}; `peer` runs only §15 (Foldline beside the Agents SDK's Sessions, which
    // runs only when asked for) and writes results/peer.{md,json}.
    only: { type: "string" },
    // §13's long conversation, in events (a million takes about an hour here).
    "scale-events": { type: "string", default: "100000" },
    // §13's long chain, in boundaries (a boundary every dozen or so messages; 10,000 take hours here: docs/OPERATIONS.md "At length").
    "scale-boundaries": { type: "string", default: "1000" },
  },
});
if (args.only !== undefined && !["memory", "shards", "locomo", "scale", "scripts", "peer"].includes(args.only)) {
  console.error("--only: memory (§9 and §10), shards (§11), locomo (§12), scale (§13), scripts (§14) or peer (§15), the sections that run on Workers of their own");
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

const started = performance.now();
/** @param {string} line */
function log(line) {
  const seconds = ((performance.now() - started) / 1000).toFixed(1).padStart(6);
  console.log(`[${seconds}s] ${line}`);
}

/** Everything the report is made of. */
const results = /** @type {Record<string, any>} */ ({ only: args.only, metrics: {}, errors: [] });

/** One metric's measurement: a failure is recorded as the metric's and the run goes on, unless the Worker itself failed. @param {string} metric @param {() => Promise<unknown>} body */
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
      args.only === "scale" ? "§13: the offline extractive compactor and the offline extractor, on a Worker of its own with no model key" : null,
      args.only === undefined || args.only === "scripts" ? "§14: none runs (trigger 2,000,000 characters; no key either)" : null,
      args.only === "peer" ? `§15: Foldline's compactor and the peer's summarizer both call the loopback fake (summary ≤ ${FAKE_SUMMARY_CHARS} chars); memory extraction offline` : null,
    ]
      .filter((part) => part !== null)
      .join("; "),
    workDir: work,
  };
  log(`work directory ${work} (source: ${SOURCE === "head" ? `HEAD ${git.commit?.slice(0, 12)}` : `working tree at ${git.commit?.slice(0, 12)}, ${git.dirtyWorkerFiles} modified Worker file(s)`})`);

  snapshotApp(ROOT, appDir, SOURCE);

  const fake = await startFakeOpenAi({ summaryChars: FAKE_SUMMARY_CHARS });
  try {
    if (args.only === undefined) {
      await runMainWorker({ root: ROOT, appDir, persistDir, envFile, logPath, fake, size: SIZE, metrics: results.metrics, log, phase, onStarted: () => (results.started = true) });
    }
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
    // §11, one Worker per row (1, 2 and 4 shards, local D1 and simulated), one at a time.
    if (args.only === undefined || args.only === "shards") {
      await phase("shards", async () => {
        results.metrics.shards = await runShardPhase({ root: ROOT, appDir, workDir: work, fake, log, quick: args.quick });
      });
    }
    // §13 (scale) only when asked for: it loads a conversation of --scale-events events.
    if (args.only === "scale") {
      await phase("scale", async () => {
        results.metrics.scale = await runScalePhase({ root: ROOT, appDir, workDir: work, fake, log, quick: args.quick, events: Number(args["scale-events"]), chainBoundaries: Number(args["scale-boundaries"]) });
      });
    }
    // §15 (the peer) only when asked for: LoCoMo and §10's chat through Foldline and the Agents SDK's Sessions.
    if (args.only === "peer") {
      await phase("peer", async () => {
        results.metrics.peer = await runPeerPhase({ root: ROOT, appDir, workDir: work, fake, log, quick: args.quick });
      });
    }
    // §14 after the others, on a Worker of its own: an append's cost by script and length.
    if (args.only === undefined || args.only === "scripts") {
      await phase("scripts", async () => {
        results.metrics.scripts = await runScriptsPhase({ root: ROOT, appDir, workDir: work, fake, log, quick: args.quick });
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
