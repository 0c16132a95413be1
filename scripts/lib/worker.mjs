// The real Worker under `wrangler dev` (local workerd), isolated from the developer's own state,
// for the bench and the browser test: a fresh --persist-to directory (its own D1, R2, Queues and
// Durable Object storage), an explicit --env-file (so a developer's .dev.vars, which may hold a
// real OPENAI_API_KEY, is never loaded), loopback ports other than 8787, and a token inserted
// straight into that directory's D1.
//
// wrangler dev watches its sources and hot-reloads on every edit, and a reload drops in-flight
// Durable Object state and queue deliveries mid-run (seen: a planned compaction whose job never
// reached the consumer after an edit to src/). So a run uses a snapshot of the Worker's sources
// copied at start (node_modules linked, not copied): edits made while it runs cannot reach the
// Worker being measured or driven.
import "../offline-env.mjs";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { cpSync, createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { d1BindingsOf } from "./d1-bindings.mjs";

/** @typedef {{ url: string, port: number, pid: number, logPath: string, stop: () => Promise<void>, kill: () => Promise<void>, alive: () => boolean, workerdRssKiB: () => number | null, cpuThreads: () => { pid: number, tid: number, process: string, thread: string, seconds: number }[] }} RunningWorker */

export class WorkerError extends Error {}

/**
 * The project's own wrangler, run by the Node that runs the bench (the pinned Node 22 under
 * `npm run bench`), never a global one and never whatever `node` is first on PATH.
 * @param {string} root project root
 * @param {string[]} args
 * @returns {[string, string[]]} command and arguments
 */
function wrangler(root, args) {
  const entry = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
  if (!existsSync(entry)) throw new WorkerError(`wrangler not found at ${entry}: run \`npm ci\` first`);
  return [process.execPath, [entry, ...args]];
}

/** The environment of every wrangler child: the project's bin first on PATH, prompts answered. @param {string} root */
function childEnv(root) {
  return { ...process.env, CI: "true", NO_COLOR: "1", PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH ?? ""}` };
}

/** What `wrangler dev` needs to build and run the Worker (wrangler.toml names `src/` and `migrations/`; the instrumented entry hosts the Agents SDK's Sessions over `client/`). */
const APP_FILES = ["wrangler.toml", "package.json", "tsconfig.json", "worker-configuration.d.ts", "src", "migrations", "bench/worker", "client"];

/**
 * Copies the Worker's sources into `appDir` and links node_modules, so that wrangler builds and
 * watches files no one else edits during the run. `source` is the working tree as it is now, or
 * the committed HEAD (`git archive`), for numbers that belong to exactly one commit.
 * @param {string} root @param {string} appDir @param {"worktree" | "head"} source
 */
export function snapshotApp(root, appDir, source) {
  mkdirSync(appDir, { recursive: true });
  const present = APP_FILES.filter((name) => existsSync(join(root, name)));
  if (source === "head") {
    const archive = execFileSync("git", ["archive", "--format=tar", "HEAD", "--", ...present], { cwd: root, maxBuffer: 256 * 1024 * 1024 });
    execFileSync("tar", ["-x", "-C", appDir], { input: archive });
  } else {
    for (const name of present) cpSync(join(root, name), join(appDir, name), { recursive: true });
  }
  symlinkSync(join(root, "node_modules"), join(appDir, "node_modules"), "dir");
}

/**
 * Runs a one-shot wrangler command against the persist directory; throws with its output on failure.
 * @param {string} root project root (for the wrangler binary)
 * @param {string} appDir the snapshot wrangler runs in
 * @param {string[]} args
 */
function wranglerOnce(root, appDir, args) {
  const [command, argv] = wrangler(root, args);
  const result = spawnSync(command, argv, {
    cwd: appDir,
    encoding: "utf8",
    env: childEnv(root), // CI=true answers wrangler's confirmation prompt
    timeout: 120_000,
  });
  if (result.status !== 0) {
    const output = stripAnsi(`${result.stdout ?? ""}\n${result.stderr ?? ""}`).trim().split("\n").slice(-30).join("\n");
    throw new WorkerError(`\`wrangler ${args.slice(0, 3).join(" ")} …\` failed (exit ${result.status ?? result.signal}):\n${output}`);
  }
  return result.stdout;
}

/** @param {string} root @param {string} appDir @param {string} persistDir */
export function applyMigrations(root, appDir, persistDir) {
  // The control database and every shard the snapshot's wrangler.toml binds, each with its own set.
  for (const binding of d1BindingsOf(join(appDir, "wrangler.toml"))) {
    wranglerOnce(root, appDir, ["d1", "migrations", "apply", binding, "--local", "--persist-to", persistDir]);
  }
}

/**
 * Makes an API token the way scripts/create-token.mjs does (only its SHA-256 is stored), in the
 * run's own D1.
 * @param {string} root @param {string} appDir @param {string} persistDir @param {string[]} scopes @param {string} name
 */
export function createToken(root, appDir, persistDir, scopes, name) {
  const token = `fl_${randomBytes(32).toString("base64url")}`;
  const hash = createHash("sha256").update(token).digest("hex");
  // Scopes and names are fixed strings of the calling script, so quoting them inline is safe.
  if (!/^[A-Za-z0-9 ._-]{1,64}$/.test(name)) throw new WorkerError(`token name ${JSON.stringify(name)} is not 1–64 letters, digits, . _ -`);
  const sql = `INSERT INTO api_tokens (token_hash, name, scopes, created_at) VALUES ('${hash}', '${name}', '${JSON.stringify(scopes)}', '${new Date().toISOString()}')`;
  wranglerOnce(root, appDir, ["d1", "execute", "DB", "--local", "--persist-to", persistDir, "--command", sql]);
  return token;
}

/** @param {number} port @returns {Promise<boolean>} */
function portFree(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * The preferred loopback port if it is free, else one the OS picks.
 * @param {number} preferred
 */
export async function freePort(preferred) {
  if (preferred > 0 && (await portFree(preferred))) return preferred;
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The pids of every process in a process group (Linux /proc; empty elsewhere).
 * @param {number} pgid
 * @returns {{ pid: number, comm: string }[]}
 */
function groupMembers(pgid) {
  if (!existsSync("/proc")) return [];
  const members = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Fields after the parenthesised command: state ppid pgrp …
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      const fields = stat.slice(close + 2).split(" ");
      if (Number(fields[2]) === pgid) members.push({ pid: Number(entry), comm });
    } catch {
      // The process went away while we looked.
    }
  }
  return members;
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux the bench meets). */
let ticksPerSecond = 0;
function clockTicks() {
  if (ticksPerSecond === 0) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * User + system CPU seconds of a process's or thread's /proc stat line.
 * @param {string} stat
 */
function statCpuSeconds(stat) {
  // Fields after the parenthesised command start at field 3 (state); utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

/**
 * Every thread of a process with the CPU seconds it has used so far (Linux /proc); empty when the process is gone.
 * @param {number} pid @param {string} comm the process's command name
 * @returns {{ pid: number, tid: number, process: string, thread: string, seconds: number }[]}
 */
function threadsOf(pid, comm) {
  const threads = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        threads.push({ pid, tid: Number(tid), process: comm, thread: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), seconds: statCpuSeconds(stat) });
      } catch {
        // The thread ended while we looked.
      }
    }
  } catch {
    // The process ended while we looked.
  }
  return threads;
}

/**
 * Starts `wrangler dev` on loopback and waits until /healthz answers. wrangler runs in its own
 * process group so that stop() ends wrangler and the workerd it started, and nothing else.
 * `appDir` is where the Worker's wrangler.toml is; `ready` says what answer means a Worker other
 * than Foldline is up (the example bot: its own 404 at `/`).
 * `main`: the entry to run instead of wrangler.toml's (`bench/worker/index.ts` for the meters).
 * @param {{ root: string, appDir: string, persistDir: string, envFile: string, port: number, logPath: string, log: (line: string) => void, ready?: { path: string, status: number }, main?: string }} options
 * @returns {Promise<RunningWorker>}
 */
export async function startWorker({ root, appDir, persistDir, envFile, port, logPath, log, ready = { path: "/healthz", status: 200 }, main }) {
  const inspectorPort = await freePort(0);
  const args = [
    "dev",
    // Another entry than wrangler.toml's `main`: the benchmark's instrumented Worker (bench/worker).
    ...(main === undefined ? [] : [main]),
    "--ip", "127.0.0.1",
    "--port", String(port),
    "--inspector-port", String(inspectorPort),
    "--persist-to", persistDir,
    "--env-file", envFile,
    "--log-level", process.env.FOLDLINE_WRANGLER_LOG ?? "warn",
  ];
  const logFile = createWriteStream(logPath, { flags: "a" });
  const [command, argv] = wrangler(root, args);
  const child = spawn(command, argv, {
    cwd: appDir,
    env: childEnv(root),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group: killed as a group, and only that group
  });
  child.stdout.pipe(logFile);
  child.stderr.pipe(logFile);
  const pid = child.pid;
  if (pid === undefined) throw new WorkerError("wrangler dev did not start (no pid)");
  /** @type {number | null} */
  let exitCode = null;
  let exited = false;
  const exitedPromise = new Promise((resolve) =>
    child.once("exit", (code, signal) => {
      exited = true;
      exitCode = code ?? (signal === null ? null : -1);
      resolve(undefined);
    }),
  );
  registerCleanup(pid);

  /** @param {boolean} hard SIGKILL at once (a crash: nothing gets to finish), or SIGTERM first. */
  const end = async (hard) => {
    if (!exited) {
      try {
        process.kill(-pid, hard ? "SIGKILL" : "SIGTERM");
      } catch {
        // already gone
      }
      const timeout = sleep(8_000).then(() => "timeout");
      if ((await Promise.race([exitedPromise, timeout])) === "timeout") {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // already gone
        }
        await exitedPromise;
      }
    }
    // workerd may outlive wrangler briefly; make sure nothing of this group is left.
    for (let i = 0; i < 20 && groupMembers(pid).length > 0; i++) {
      if (i === 10) for (const member of groupMembers(pid)) try { process.kill(member.pid, "SIGKILL"); } catch { /* gone */ }
      await sleep(200);
    }
    unregisterCleanup(pid);
    await new Promise((resolve) => logFile.end(resolve));
  };
  const stop = () => end(false);

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (exited) {
      await stop();
      throw new WorkerError(`wrangler dev exited (code ${exitCode}) before answering on ${url}; its log (${logPath}):\n${tail(logPath)}`);
    }
    try {
      const response = await fetch(`${url}${ready.path}`, { signal: AbortSignal.timeout(2_000) });
      if (response.status === ready.status) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new WorkerError(`wrangler dev did not answer ${ready.path} with ${ready.status} on ${url} within 90 s; its log (${logPath}):\n${tail(logPath)}`);
    }
    await sleep(250);
  }
  log(`wrangler dev is up on ${url} (pid ${pid})`);

  return {
    url,
    port,
    pid,
    logPath,
    stop,
    kill: () => end(true),
    alive: () => !exited,
    /** Resident memory of the workerd process(es) of this wrangler, in KiB (Linux only). */
    workerdRssKiB: () => {
      const members = groupMembers(pid).filter((m) => m.comm.startsWith("workerd"));
      if (members.length === 0) return null;
      let total = 0;
      for (const { pid: member } of members) {
        try {
          const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${member}/status`, "utf8"));
          total += Number(match?.[1] ?? 0);
        } catch {
          // gone
        }
      }
      return total;
    },
    /**
     * Every thread of every process of this wrangler (wrangler's node, esbuild, workerd) with the
     * CPU seconds (user + system) it has used so far (Linux only; empty elsewhere). Read twice, the
     * difference is what a stretch of work cost each: a workerd process runs its isolates and local
     * D1 on one main thread, so its busiest thread says how close the Worker is to its bound.
     */
    cpuThreads: () => groupMembers(pid).flatMap(({ pid: member, comm }) => threadsOf(member, comm)),
  };
}

/** wrangler colours its errors even into a pipe; strip the escape codes for readable excerpts. @param {string} text */
const stripAnsi = (text) => text.replace(/\x1b\[[0-9;]*m/g, "");

/** @param {string} path */
function tail(path) {
  try {
    return stripAnsi(readFileSync(path, "utf8")).trim().split("\n").slice(-40).join("\n");
  } catch {
    return "(no log)";
  }
}

// Process groups to end if the bench itself dies (an exception, Ctrl-C): never leave workerd running.
/** @type {Set<number>} */
const live = new Set();
let hooked = false;
/** @param {number} pgid */
function registerCleanup(pgid) {
  live.add(pgid);
  if (hooked) return;
  hooked = true;
  const killAll = () => {
    for (const group of live) {
      try {
        process.kill(-group, "SIGKILL");
      } catch {
        // gone
      }
    }
    live.clear();
  };
  process.once("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.once(signal, () => {
      killAll();
      process.exit(130);
    });
  }
}
/** @param {number} pgid */
function unregisterCleanup(pgid) {
  live.delete(pgid);
}

/**
 * Writes the env file wrangler dev reads instead of .dev.vars/.env.
 * @param {string} path @param {Record<string, string>} vars
 */
export async function writeEnvFile(path, vars) {
  await writeFile(path, Object.entries(vars).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join("\n") + "\n");
}
