#!/usr/bin/env node
// `npm run token -- --scope 'api:acme:*' [--scope …] [--name NAME] [--remote]`
// `npm run token -- --scope ops --name NAME [--remote]`
//   Makes an API token (`ops`: the operator's, for /v1/ops/health and /v1/ops/incidents, which
//   reads no conversation), stores only its SHA-256 in D1 (local by default, --remote for the deployed
//   database), and prints the token once. Apply migrations first (`npm start` does it locally).
// `npm run token -- --list [--remote]`
//   Lists the tokens on file: name, scopes, when made, whether revoked (never a token or its hash).
// `npm run token -- --revoke NAME [--remote]`
//   Revokes every unrevoked token with that name; a revoked token authenticates nothing, at once.
import "./offline-env.mjs";
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    scope: { type: "string", multiple: true },
    name: { type: "string", default: "cli" },
    remote: { type: "boolean", default: false },
    list: { type: "boolean", default: false },
    revoke: { type: "string" },
  },
});
const NAME = /^[A-Za-z0-9 ._-]{1,64}$/;

/** Runs one statement on the local or remote D1; returns its result rows. @param {string} sql */
function d1(sql) {
  const result = spawnSync("wrangler", ["d1", "execute", "DB", values.remote ? "--remote" : "--local", "--json", "--command", sql], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
    env: { ...process.env, CI: "true" },
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
  return JSON.parse(result.stdout)[0]?.results ?? [];
}

if (values.list) {
  const rows = d1("SELECT name, scopes, created_at, revoked_at FROM api_tokens ORDER BY created_at");
  for (const row of rows) {
    console.log(`${row.name}\t${JSON.parse(row.scopes).join(" ")}\tmade ${row.created_at}${row.revoked_at === null ? "" : `\trevoked ${row.revoked_at}`}`);
  }
  if (rows.length === 0) console.log("no tokens on file");
  process.exit(0);
}

if (values.revoke !== undefined) {
  if (!NAME.test(values.revoke)) {
    console.error("--revoke NAME: 1–64 letters, digits, spaces, . _ -");
    process.exit(2);
  }
  // The name was checked against a strict pattern above, so quoting it inline is safe.
  const revoked = d1(`UPDATE api_tokens SET revoked_at = '${new Date().toISOString()}' WHERE name = '${values.revoke}' AND revoked_at IS NULL RETURNING name`);
  console.log(revoked.length === 0 ? `no unrevoked token is named ${values.revoke}` : `revoked ${revoked.length} token(s) named ${values.revoke}`);
  process.exit(0);
}

const scopes = values.scope ?? [];
// `ops` is src/core/ops.ts's OPS_SCOPE; the rest are conversation and agent patterns.
const SCOPE = /^(ops|\*|(telegram|api|agent):[A-Za-z0-9._:-]*\*?)$/;
if (scopes.length === 0 || !scopes.every((s) => SCOPE.test(s))) {
  console.error("usage: npm run token -- --scope 'api:acme:*' [--scope 'telegram:123:*'] [--name NAME] [--remote]");
  console.error("       npm run token -- --scope ops --name NAME [--remote]   (an operator's token)");
  console.error("       npm run token -- --list [--remote] | --revoke NAME [--remote]");
  console.error("a scope is a conversation or agent id (telegram:…, api:…, agent:…), or a prefix of one ending in *,");
  console.error("or * for every conversation, or ops for the operator's routes");
  process.exit(2);
}
if (!NAME.test(values.name)) {
  console.error("--name: 1–64 letters, digits, spaces, . _ -");
  process.exit(2);
}

const token = `fl_${randomBytes(32).toString("base64url")}`;
const hash = createHash("sha256").update(token).digest("hex");
// Every value was checked against a strict pattern above, so quoting is safe here.
d1(`INSERT INTO api_tokens (token_hash, name, scopes, created_at) VALUES ('${hash}', '${values.name}', '${JSON.stringify(scopes)}', '${new Date().toISOString()}')`);
console.log(token);
