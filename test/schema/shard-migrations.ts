import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { DatabaseSync } from "node:sqlite";

const SHARD = fileURLToPath(new URL("../../migrations/shard/", import.meta.url));

/** Applies the shard migrations from `from` (a file name's prefix, "" for all) up to, not including, `below`. */
export function migrateShard(db: DatabaseSync, from = "", below?: string): void {
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql") && f >= from && (below === undefined || f < below)).sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
}
