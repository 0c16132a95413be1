#!/usr/bin/env node
// `npm start`: the local service on its embedded default — local D1, R2, Queues and Durable
// Objects under .wrangler/state, migrations applied first, no Cloudflare account, no API key.
import "./offline-env.mjs";
import { spawn, spawnSync } from "node:child_process";

const migrate = spawnSync("wrangler", ["d1", "migrations", "apply", "DB", "--local"], {
  stdio: "inherit",
  env: { ...process.env, CI: "true" }, // answer wrangler's confirmation prompt
});
if (migrate.status !== 0) process.exit(migrate.status ?? 1);

console.log("\nFoldline: starting on http://127.0.0.1:8787 — create an API token with `npm run token -- --scope 'api:*'`\n");
const dev = spawn("wrangler", ["dev", "--ip", "127.0.0.1", "--port", "8787", ...process.argv.slice(2)], { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => process.exit(code ?? 0));
