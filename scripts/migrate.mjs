#!/usr/bin/env node
// `npm run migrate` applies the migrations to every D1 database wrangler.toml binds: the control
// set (migrations/control) to DB and the shard set (migrations/shard) to each DB_SHARD_<n>, as
// each binding's migrations_dir says. Local by default (.wrangler/state, what `npm start` uses);
// `npm run migrate -- --remote` applies them to the deployment's databases. Any other argument
// (`--persist-to DIR`, `--config FILE`, `--env NAME`) is passed to every wrangler command.
// Then it moves the rows of the tables migrations replaced and writes the word indexes of what a
// database held before them (scripts/lib/search-backfill.mjs), in batches; a database with nothing
// left to do costs one query. The log's old rows leave `events` (migrations/shard/0031) only where
// the Worker that reads `log` is live: for the local databases here, always; for the deployment's,
// `npm run deploy` runs `npm run migrate -- --remote --release` after its upload (`--release`: only that step).
import "./offline-env.mjs";
import { join } from "node:path";
import { d1BindingsOf } from "./lib/d1-bindings.mjs";
import { ROOT, wrangler } from "./lib/local-state.mjs";
import { backfillSearch, releaseLog } from "./lib/search-backfill.mjs";

const release = process.argv.includes("--release");
const args = process.argv.slice(2).filter((arg) => arg !== "--release");
const configAt = args.indexOf("--config");
const config = configAt >= 0 && args[configAt + 1] !== undefined ? args[configAt + 1] : join(ROOT, "wrangler.toml");
const where = args.includes("--remote") ? [] : args.includes("--local") ? [] : ["--local"];
for (const binding of d1BindingsOf(config)) {
  if (release) {
    await releaseLog(binding, [...where, ...args], (line) => console.log(line));
    continue;
  }
  const result = wrangler(["d1", "migrations", "apply", binding, ...where, ...args], { capture: true });
  const applied = new Set(result.stdout.match(/\d{4}_[\w-]+\.sql/g) ?? []).size;
  if (result.status !== 0) {
    console.error(`${result.stdout}\n${result.stderr}\nFoldline: applying the migrations to ${binding} failed (above).`);
    process.exit(result.status ?? 1);
  }
  console.log(`${binding}: ${applied === 0 ? "migrations already applied" : `${applied} migration(s) applied`}`);
  await backfillSearch(binding, [...where, ...args], (line) => console.log(line));
  if (!args.includes("--remote")) await releaseLog(binding, [...where, ...args], (line) => console.log(line));
}
