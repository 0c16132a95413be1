#!/usr/bin/env node
// `npm run deploy`: creates what wrangler.toml names and the account lacks, then migrates every
// remote database and deploys, safe to run again. Needs a Cloudflare account (`npx wrangler login`,
// or CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID). The steps:
//   1. D1: each database wrangler.toml names that does not exist is created (`d1 create`), and each
//      binding's database_id is written into wrangler.toml from the account's list (commit it).
//   2. The R2 bucket and the queues (the dead-letter queue too) are created unless they exist.
//   3. `npm run migrate -- --remote`: the control set on DB, the shard set on every shard.
//   4. `wrangler deploy`.
//   5. `npm run migrate -- --remote --release`: the log's rows stored before migrations/shard/0031
//      leave `events`, now that the Worker that reads `log` is live, and the log's high-water mark
//      is written once an append (0032), now that no Worker that does not write it appends, and
//      sources and skipped runs are spelled short (0033), now that no Worker that cannot read
//      them runs.
// Secrets (the model key, Telegram webhook secrets and bot tokens, OPS_ALERT_SECRET) are not
// touched: docs/OPERATIONS.md, "Deploying". `--dry-run` prints the plan and changes nothing.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { alreadyExists, deployPlan, deployResources, withDatabaseIds } from "./lib/deploy-plan.mjs";
import { ROOT, wrangler } from "./lib/local-state.mjs";

const dryRun = process.argv.includes("--dry-run");
const configPath = join(ROOT, "wrangler.toml");

/** Runs wrangler, capturing its output; exits with it on failure unless `tolerate` accepts it. */
function run(args, tolerate = () => false) {
  const result = wrangler(args, { capture: true });
  const output = `${result.stdout ?? ""}\n${result.stderr ?? ""}`;
  if (result.status !== 0 && !tolerate(output)) {
    console.error(`${output}\nFoldline: \`wrangler ${args.join(" ")}\` failed (above).`);
    process.exit(result.status ?? 1);
  }
  return output;
}

/** The account's D1 databases. */
function listDatabases() {
  const text = run(["d1", "list", "--json"]);
  const start = text.indexOf("[");
  return JSON.parse(text.slice(start, text.lastIndexOf("]") + 1));
}

const resources = deployResources(readFileSync(configPath, "utf8"));
let databases = listDatabases();
const steps = deployPlan(resources, databases);
for (const step of steps) console.log(`${dryRun ? "would " : ""}${step.kind.replace("_", " ")} ${step.kind === "set_id" ? `${step.binding} (${step.name})` : step.name}`);
if (dryRun) process.exit(0);

for (const step of steps) if (step.kind === "create_d1") run(["d1", "create", step.name]);
const ids = steps.filter((step) => step.kind === "set_id");
if (ids.length > 0) {
  databases = listDatabases();
  const byName = new Map(databases.map((db) => [db.name, db.uuid]));
  const byBinding = new Map(ids.map((step) => [step.binding, byName.get(step.name)]).filter(([, id]) => id !== undefined));
  writeFileSync(configPath, withDatabaseIds(readFileSync(configPath, "utf8"), byBinding));
  console.log(`wrote ${byBinding.size} database id(s) into wrangler.toml: commit them`);
}
for (const step of steps) {
  if (step.kind === "ensure_bucket") run(["r2", "bucket", "create", step.name], alreadyExists);
  if (step.kind === "ensure_queue") run(["queues", "create", step.name], alreadyExists);
}
const migrate = spawnSync(process.execPath, [join(ROOT, "scripts", "migrate.mjs"), "--remote"], { cwd: ROOT, stdio: "inherit" });
if (migrate.status !== 0) process.exit(migrate.status ?? 1);
const deployed = wrangler(["deploy"]);
if (deployed.status !== 0) process.exit(deployed.status ?? 1);
// The Worker that reads `log` is live: the log's rows copied before it leave `events` (migrations/shard/0031).
const released = spawnSync(process.execPath, [join(ROOT, "scripts", "migrate.mjs"), "--remote", "--release"], { cwd: ROOT, stdio: "inherit" });
if (released.status !== 0) process.exit(released.status ?? 1);
console.log("deployed: set the secrets (docs/OPERATIONS.md, "Deploying") if this is the first deploy");
