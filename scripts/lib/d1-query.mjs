// SQL run on one D1 binding through the project's wrangler, for the steps of `npm run migrate` that
// a migration file cannot do (scripts/lib/search-backfill.mjs: search terms computed by
// src/core/search-text.ts). Local by default; `where` holds the flags migrate.mjs passes through
// (`--remote`, `--persist-to DIR`, `--config FILE`, `--env NAME`).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { wrangler } from "./local-state.mjs";

/**
 * The rows `sql` (one statement) returns. Its values are inlined by the caller with `sqlLiteral`.
 * @param {string} binding @param {readonly string[]} where @param {string} sql
 * @returns {Record<string, unknown>[]}
 */
export function d1Rows(binding, where, sql) {
  const result = wrangler(["d1", "execute", binding, ...where, "--json", "--command", sql], { capture: true });
  if (result.status !== 0) throw new Error(`${binding}: ${sql.slice(0, 120)}… failed:\n${result.stderr || result.stdout}`);
  const parsed = JSON.parse(result.stdout);
  return Array.isArray(parsed) ? (parsed[0]?.results ?? []) : [];
}

/**
 * Runs `statements` on `binding` as one file (D1 runs a file's statements in one transaction).
 * @param {string} binding @param {readonly string[]} where @param {readonly string[]} statements
 */
export function d1Run(binding, where, statements) {
  if (statements.length === 0) return;
  const dir = mkdtempSync(join(tmpdir(), "foldline-d1-"));
  try {
    const file = join(dir, "step.sql");
    writeFileSync(file, `${statements.join(";\n")};\n`);
    const result = wrangler(["d1", "execute", binding, ...where, "--yes", "--file", file], { capture: true });
    if (result.status !== 0) throw new Error(`${binding}: a step of ${statements.length} statements failed:\n${result.stderr || result.stdout}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `value` as an SQL literal: NULL, an integer, or a string with its quotes doubled (any text,
 * including NUL-free Unicode of every script, is a valid SQLite string literal that way).
 * @param {string | number | null | undefined} value
 */
export function sqlLiteral(value) {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new Error(`not an integer: ${value}`);
    return String(value);
  }
  if (value.includes("\0")) throw new Error("a NUL in text meant for an SQL literal");
  return `'${value.replaceAll("'", "''")}'`;
}
