#!/usr/bin/env node
// `npm run shards [-- --remote]`: where the conversations live. For every shard wrangler.toml binds:
// how many conversations are placed on it (the control database's `conversation_placements`),
// whether it takes new ones (`SHARDS_CLOSED`), and with --remote its size as Cloudflare reports it
// (`wrangler d1 info`; local databases have no such figure) against D1's 10 GB limit. Read-only.
import "./offline-env.mjs";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { d1Bindings } from "./lib/d1-bindings.mjs";
import { ROOT, wrangler } from "./lib/local-state.mjs";

const remote = process.argv.includes("--remote");
const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
const D1_LIMIT_BYTES = 10e9;
/** Close a shard to new conversations at this share of the limit (docs/OPERATIONS.md, "Scaling"). */
const CLOSE_AT = 0.8;

/** The database_name of each D1 binding (one `key = "value"` per line, as wrangler.toml has it). */
function databaseNames() {
  const names = new Map();
  let binding;
  for (const line of toml.split("\n").map((l) => l.trim())) {
    if (line.startsWith("[")) binding = undefined;
    const key = /^(binding|database_name)\s*=\s*"([^"]*)"/.exec(line);
    if (key?.[1] === "binding") binding = key[2];
    if (key?.[1] === "database_name" && binding !== undefined) names.set(binding, key[2]);
  }
  return names;
}

/** @param {string[]} args */
function json(args) {
  const result = wrangler([...args, "--json"], { capture: true });
  if (result.status !== 0) {
    console.error(`${result.stdout}\n${result.stderr}`);
    process.exit(result.status ?? 1);
  }
  return JSON.parse(result.stdout);
}

const shards = d1Bindings(toml).filter((name) => name !== "DB");
const closed = new Set((/^SHARDS_CLOSED\s*=\s*"([^"]*)"/m.exec(toml)?.[1] ?? "").split(",").map((s) => s.trim()).filter(Boolean));
const placed = new Map(
  json(["d1", "execute", "DB", remote ? "--remote" : "--local", "--command", "SELECT shard, COUNT(*) AS n FROM conversation_placements GROUP BY shard"])[0].results.map(
    (/** @type {{ shard: string, n: number }} */ row) => [row.shard, row.n],
  ),
);
const names = databaseNames();
console.log(["shard", "conversations", "takes new ones", remote ? "size" : ""].join("\t"));
for (const shard of shards) {
  let size = "";
  if (remote) {
    const info = json(["d1", "info", names.get(shard) ?? shard]);
    const bytes = Number(info.file_size ?? info.database_size ?? Number.NaN);
    size = Number.isFinite(bytes) ? `${(bytes / 1e9).toFixed(2)} GB (${Math.round((bytes / D1_LIMIT_BYTES) * 100)}% of 10 GB)${bytes > CLOSE_AT * D1_LIMIT_BYTES && !closed.has(shard) ? " — close it (SHARDS_CLOSED) and add a shard" : ""}` : "unknown";
  }
  console.log([shard, placed.get(shard) ?? 0, closed.has(shard) ? "no (SHARDS_CLOSED)" : "yes", size].join("\t"));
}
for (const [shard, n] of placed) if (!shards.includes(shard)) console.log(`${shard}\t${n}\tNOT BOUND: these conversations fail until wrangler.toml binds ${shard} again`);
