#!/usr/bin/env node
// `npm run reset`: deletes the local state `npm start` runs on — wrangler's local D1, R2, Queues
// and Durable Objects (.wrangler/state, where `wrangler dev` and `d1 migrations apply --local`
// keep them when no --persist-to is given) and Foldline's own beside them (.wrangler/foldline: the
// local API token, the demo bot's webhook secret, the generated env file) — so the next
// `npm start` begins empty and prints a new token. It stops nothing: while an `npm start` of this
// checkout runs (its lock under .wrangler/foldline), or Foldline answers on FOLDLINE_PORT, it
// refuses and deletes nothing. Build output (.wrangler/tmp) is not state and stays.
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { localPort, localUrl } from "./lib/local-port.mjs";
import { ROOT } from "./lib/local-state.mjs";
import { runningStarts } from "./lib/start-lock.mjs";

const STATE = [
  { path: join(ROOT, ".wrangler", "state"), what: "local D1, R2, Queues and Durable Objects" },
  { path: join(ROOT, ".wrangler", "foldline"), what: "the local API token, the demo bot's webhook secret" },
];

/**
 * Whether Foldline answers on `url`: its `GET /` names the service. A port that accepts the
 * connection but does not answer in time is taken as a Foldline still starting.
 * @param {string} url
 * @returns {Promise<"foldline" | "silent" | "other" | "closed">}
 */
async function probe(url) {
  try {
    const response = await fetch(`${url}/`, { signal: AbortSignal.timeout(3_000) });
    const body = await response.json().catch(() => null);
    return body !== null && typeof body === "object" && body.service === "foldline" ? "foldline" : "other";
  } catch (error) {
    const cause = /** @type {{ cause?: { code?: string } }} */ (error).cause;
    return cause?.code === "ECONNREFUSED" ? "closed" : error instanceof Error && error.name === "TimeoutError" ? "silent" : "closed";
  }
}

/** Files and bytes under `path`. @param {string} path @returns {{ files: number, bytes: number }} */
function size(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return { files: 1, bytes: stat.size };
  let files = 0;
  let bytes = 0;
  for (const name of readdirSync(path)) {
    const inner = size(join(path, name));
    files += inner.files;
    bytes += inner.bytes;
  }
  return { files, bytes };
}

/** @param {number} bytes */
const human = (bytes) => (bytes < 1024 ? `${bytes} B` : bytes < 1024 ** 2 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 ** 2).toFixed(1)} MiB`);

const starts = runningStarts();
if (starts.length > 0) {
  const which = starts.map(({ pid, port }) => `pid ${pid}${Number.isNaN(port) ? "" : ` on ${localUrl(port)}`}`).join(", ");
  console.error(`npm run reset: npm start is running (${which}); stop it (Ctrl-C in its terminal), then run npm run reset again. Nothing was deleted.`);
  process.exit(1);
}
const url = localUrl(localPort());
const answer = await probe(url);
if (answer === "foldline" || answer === "silent") {
  const seen = answer === "foldline" ? "Foldline answers" : "something accepts connections but does not answer";
  console.error(`npm run reset: ${seen} on ${url} (a wrangler dev on this state?); stop it, then run npm run reset again. Nothing was deleted.`);
  process.exit(1);
}

let removed = 0;
for (const { path, what } of STATE) {
  if (!existsSync(path)) continue;
  const { files, bytes } = size(path);
  rmSync(path, { recursive: true, force: true });
  removed += 1;
  console.log(`removed ${relative(ROOT, path)}/ (${what}: ${files} file${files === 1 ? "" : "s"}, ${human(bytes)})`);
}
console.log(removed === 0 ? "nothing to remove: there is no local state yet." : "The next npm start applies the migrations to an empty local D1 and makes a new API token.");
