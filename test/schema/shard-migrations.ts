import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { DatabaseSync } from "node:sqlite";

const SHARD = fileURLToPath(new URL("../../migrations/shard/", import.meta.url));

/** The migrations each database was given here, so a later call applies each only once. */
const applied = new WeakMap<DatabaseSync, Set<string>>();

function apply(db: DatabaseSync, files: readonly string[]): void {
  const done = applied.get(db) ?? new Set<string>();
  applied.set(db, done);
  for (const file of files.filter((f) => !done.has(f))) {
    db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
    done.add(file);
  }
}

const files = (): string[] => readdirSync(SHARD).filter((f) => f.endsWith(".sql")).sort();

/** Applies the shard migrations from `from` (a file name's prefix, "" for all) up to, not including, `below`, each not applied here yet. */
export function migrateShard(db: DatabaseSync, from = "", below?: string): void {
  apply(
    db,
    files().filter((f) => f >= from && (below === undefined || f < below)),
  );
}

/**
 * The one table today's log writer and readers name beyond those of the log itself (0038's
 * `log_texts` and its mode), for a test that appends with today's writer to a shard as it stood
 * before an earlier migration: 0038 only adds them beside every earlier table, so applying it
 * early changes nothing else, and `migrateShard` later passes over it.
 */
export function withTodaysLogWriter(db: DatabaseSync): void {
  apply(
    db,
    files().filter((f) => f.startsWith("0038_")),
  );
}

/**
 * A shard holding `conversation`, migrated whole: stored after every migration (undefined `below`),
 * or before the migrations from `below` on, which then see a shard that held a conversation (as
 * one in production does when they run: their modes start as a Worker from before them needs).
 */
export function shardHolding(db: DatabaseSync, conversation: string, below?: string): DatabaseSync {
  migrateShard(db, "", below);
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, '2026-12-05T00:00:00.000Z')").run(conversation);
  if (below !== undefined) migrateShard(db, below);
  return db;
}
