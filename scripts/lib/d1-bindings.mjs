// The D1 bindings a wrangler.toml declares, in order: the control database (`DB`) and the shards
// (`DB_SHARD_0`, …). Every script that applies migrations applies them to each binding, so a shard
// added to wrangler.toml is migrated by the same command as the rest.
import { readFileSync } from "node:fs";

/**
 * The `binding` of every `[[d1_databases]]` table of a wrangler.toml (the subset of TOML it uses:
 * one `key = "value"` per line).
 * @param {string} tomlText
 * @returns {string[]}
 */
export function d1Bindings(tomlText) {
  const bindings = [];
  let inD1 = false;
  for (const raw of tomlText.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("[")) inD1 = line === "[[d1_databases]]";
    const match = inD1 ? /^binding\s*=\s*"([A-Za-z_][A-Za-z0-9_]*)"/.exec(line) : null;
    if (match !== null) bindings.push(match[1]);
  }
  if (!bindings.includes("DB")) throw new Error("wrangler.toml binds no control database DB");
  if (!bindings.some((name) => /^DB_SHARD_\d+$/.test(name))) throw new Error("wrangler.toml binds no shard database DB_SHARD_<n>");
  return bindings;
}

/** @param {string} path */
export function d1BindingsOf(path) {
  return d1Bindings(readFileSync(path, "utf8"));
}
