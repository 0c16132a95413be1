#!/usr/bin/env node
// `npm run token -- --scope 'api:acme:*' [--scope …] [--name NAME] [--remote]`
// Makes an API token, stores only its SHA-256 in D1 (local by default, --remote for the deployed
// database), and prints the token once. Apply migrations first (`npm start` does it locally).
import "./offline-env.mjs";
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    scope: { type: "string", multiple: true },
    name: { type: "string", default: "cli" },
    remote: { type: "boolean", default: false },
  },
});
const scopes = values.scope ?? [];
const SCOPE = /^(\*|(telegram|api|agent):[A-Za-z0-9._:-]*\*?)$/;
if (scopes.length === 0 || !scopes.every((s) => SCOPE.test(s))) {
  console.error("usage: npm run token -- --scope 'api:acme:*' [--scope 'telegram:123:*'] [--name NAME] [--remote]");
  console.error("a scope is a conversation id, or a prefix ending in *, or * for every conversation");
  process.exit(2);
}
if (!/^[A-Za-z0-9 ._-]{1,64}$/.test(values.name)) {
  console.error("--name: 1–64 letters, digits, spaces, . _ -");
  process.exit(2);
}

const token = `fl_${randomBytes(32).toString("base64url")}`;
const hash = createHash("sha256").update(token).digest("hex");
// Every value was checked against a strict pattern above, so quoting is safe here.
const sql = `INSERT INTO api_tokens (token_hash, name, scopes, created_at) VALUES ('${hash}', '${values.name}', '${JSON.stringify(scopes)}', '${new Date().toISOString()}')`;
const result = spawnSync("wrangler", ["d1", "execute", "DB", values.remote ? "--remote" : "--local", "--command", sql], {
  stdio: ["ignore", "ignore", "inherit"],
  env: { ...process.env, CI: "true" },
});
if (result.status !== 0) process.exit(result.status ?? 1);
console.log(token);
