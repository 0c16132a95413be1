// Which `npm start`s are running on this checkout's local state: each writes
// .wrangler/foldline/start-<pid>.json (its pid and port) while it runs and removes it when it
// exits, so `npm run reset` can refuse to delete state a running service holds, on any port. A file
// left by a start that was killed outright names a pid that is gone (or is no longer a start), and
// is ignored.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./local-state.mjs";

const DIR = join(ROOT, ".wrangler", "foldline");
const NAME = /^start-(\d+)\.json$/;

/**
 * Marks this process as a running `npm start` on `port` until it exits.
 * @param {number} port
 */
export function holdStartLock(port) {
  const path = join(DIR, `start-${process.pid}.json`);
  mkdirSync(DIR, { recursive: true });
  writeFileSync(path, `${JSON.stringify({ pid: process.pid, port, startedAt: new Date().toISOString() })}\n`);
  process.on("exit", () => rmSync(path, { force: true }));
}

/** @param {number} pid */
function isStart(pid) {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive, but another user's; only ESRCH means gone.
    if (/** @type {NodeJS.ErrnoException} */ (error).code !== "EPERM") return false;
  }
  // A reused pid is some other program: where /proc says what runs, it must be scripts/start.mjs.
  const cmdline = `/proc/${pid}/cmdline`;
  return !existsSync("/proc/self") || (existsSync(cmdline) && readFileSync(cmdline, "utf8").includes("start.mjs"));
}

/** The `npm start`s running now. @returns {{ pid: number, port: number }[]} */
export function runningStarts() {
  if (!existsSync(DIR)) return [];
  const running = [];
  for (const name of readdirSync(DIR)) {
    const match = NAME.exec(name);
    if (match === null || !isStart(Number(match[1]))) continue;
    try {
      const { port } = JSON.parse(readFileSync(join(DIR, name), "utf8"));
      running.push({ pid: Number(match[1]), port: Number(port) });
    } catch {
      // Half-written by a start that is just beginning: its pid is alive, so it counts.
      running.push({ pid: Number(match[1]), port: Number.NaN });
    }
  }
  return running;
}
