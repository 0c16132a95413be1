import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { describe, expect, it } from "vitest";
import { OPS_SCOPE } from "../../src/core/ops";

/**
 * `npm run token` as an operator runs it. `wrangler` is replaced on PATH by a recorder that keeps
 * the statement it was asked to run and answers as `wrangler d1 execute --json` does, so the test
 * sees exactly what would be written to the control database, with no database and no network.
 */

function run(...args: string[]): { status: number | null; stdout: string; stderr: string; statements: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "token-cli-"));
  const log = join(dir, "statements");
  writeFileSync(log, "");
  const recorder = join(dir, "wrangler");
  writeFileSync(recorder, `#!/bin/sh\nfor last; do :; done\nprintf '%s\\0' "$last" >> '${log}'\necho '[{"results":[]}]'\n`);
  chmodSync(recorder, 0o755);
  const result = spawnSync(process.execPath, ["scripts/create-token.mjs", ...args], {
    encoding: "utf8",
    env: { ...process.env, PATH: `${dir}${delimiter}${process.env.PATH ?? ""}` },
  });
  const statements = readFileSync(log, "utf8").split("\0").filter((s) => s !== "");
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, statements };
}

describe("npm run token", () => {
  it("makes the operator's token that docs/OPERATIONS.md tells operators to make: --scope ops", () => {
    const made = run("--scope", OPS_SCOPE, "--name", "opsT");
    expect(made.stderr).toBe("");
    expect(made.status).toBe(0);
    const token = made.stdout.trim();
    expect(token).toMatch(/^fl_[A-Za-z0-9_-]{43}$/);
    expect(made.statements).toHaveLength(1);
    const hash = createHash("sha256").update(token).digest("hex");
    expect(made.statements[0]).toMatch(new RegExp(`^INSERT INTO api_tokens \\(token_hash, name, scopes, created_at\\) VALUES \\('${hash}', 'opsT', '\\["ops"\\]', '`));
    expect(made.statements[0]).not.toContain(token);
  });

  it.each([["api:acme:*"], ["telegram:123:*", "agent:concierge"], ["*"], ["ops", "api:acme:*"]])("makes a token for %s", (...scopes) => {
    const made = run(...scopes.flatMap((s) => ["--scope", s]));
    expect(made.status).toBe(0);
    expect(made.statements[0]).toContain(`'${JSON.stringify(scopes)}'`);
  });

  it.each([["ops*"], ["opsx"], ["OPS"], ["ops:all"], ["api:a*b"], ["x'); DROP TABLE api_tokens; --"], [""]])("refuses the scope %j and writes nothing", (scope) => {
    const refused = run("--scope", scope);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain("ops");
    expect(refused.statements).toEqual([]);
  });
});
