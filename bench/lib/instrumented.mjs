// The Worker every bench section runs: the product behind the benchmark's instruments
// (bench/worker/index.ts: the usage ledger, the D1 meter and the D1 simulation, each off unless its
// var is on). Production deploys wrangler.toml's own entry, src/index.ts, which has none of them.
import { cpSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const INSTRUMENTED_MAIN = "bench/worker/index.ts";

/**
 * A copy of the run's snapshot (`appDir`) in `dir` whose wrangler.toml is `rewrite` of the
 * snapshot's, for a section whose Worker binds what the deployed one does not (§11's shard counts,
 * the peer section's object); node_modules linked as in the snapshot.
 * @param {string} appDir @param {string} dir @param {(toml: string) => string} rewrite
 */
export function snapshotWithConfig(appDir, dir, rewrite) {
  mkdirSync(dir, { recursive: true });
  for (const entry of readdirSync(appDir)) {
    if (entry === "node_modules") symlinkSync(join(appDir, "node_modules"), join(dir, "node_modules"), "dir");
    else cpSync(join(appDir, entry), join(dir, entry), { recursive: true });
  }
  writeFileSync(join(dir, "wrangler.toml"), rewrite(readFileSync(join(appDir, "wrangler.toml"), "utf8")));
}
