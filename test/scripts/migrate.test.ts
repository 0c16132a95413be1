import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { storedBody } from "../../src/core/stored-body";

/**
 * `npm run migrate` as an operator runs it on a deployment's local copy, through the real wrangler
 * and local D1: a shard migrated through 0030 holds a log in `events`; migrate applies 0031, copies
 * the log to `log` and, the databases being local (their Worker is always this code), lets the
 * copied rows leave `events`. Run again, it finds nothing to do. `--release` alone runs only that
 * last step, as `npm run deploy` does after its upload.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "migrate-cli-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const CONVERSATION = "telegram:7123456789:-1001987654321";
const AT = "2026-12-05T10:00:00.000Z";

function wrangler(config: string, persist: string, ...args: string[]) {
  return spawnSync(process.execPath, [join(ROOT, "node_modules/wrangler/bin/wrangler.js"), ...args, "--config", config, "--local", "--persist-to", persist], { cwd: ROOT, encoding: "utf8", env: { ...process.env, CI: "true", NO_COLOR: "1" } });
}

function migrate(config: string, persist: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [join(ROOT, "scripts/migrate.mjs"), "--config", config, "--persist-to", persist, ...args], { cwd: ROOT, encoding: "utf8", env: { ...process.env, CI: "true", NO_COLOR: "1" } });
  expect(result.status, result.stderr + result.stdout).toBe(0);
  return result.stdout;
}

function rows(config: string, persist: string, sql: string): Record<string, unknown>[] {
  const result = wrangler(config, persist, "d1", "execute", "DB_SHARD_0", "--json", "--command", sql);
  expect(result.status, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { results: Record<string, unknown>[] }[])[0]?.results ?? [];
}

it("moves a shard's log to `log` through npm run migrate, losing nothing, and does nothing when run again", { timeout: 600_000 }, () => {
  // A deployment whose shard migrations stop at 0030: its own copy of the migrations and of wrangler.toml.
  const shardDir = join(work, "shard");
  mkdirSync(shardDir);
  const all = readdirSync(join(ROOT, "migrations/shard")).filter((f) => f.endsWith(".sql")).sort();
  for (const file of all.filter((f) => f < "0031")) copyFileSync(join(ROOT, "migrations/shard", file), join(shardDir, file));
  const config = join(work, "wrangler.toml");
  writeFileSync(
    config,
    readFileSync(join(ROOT, "wrangler.toml"), "utf8")
      .replace(/^main = "src\/index.ts"/m, `main = "${join(ROOT, "src/index.ts")}"`)
      .replaceAll('migrations_dir = "migrations/control"', `migrations_dir = "${join(ROOT, "migrations/control")}"`)
      .replaceAll('migrations_dir = "migrations/shard"', `migrations_dir = "${shardDir}"`)
      // One shard is enough, and each binding costs every step a wrangler run.
      .replace(/\[\[d1_databases\]\]\nbinding = "DB_SHARD_1"[^[]*/, ""),
  );
  const persist = join(work, "state");
  for (const binding of ["DB", "DB_SHARD_0"]) {
    const applied = wrangler(config, persist, "d1", "migrations", "apply", binding);
    expect(applied.status, applied.stderr).toBe(0);
  }

  // The log as the Worker before 0031 stored it.
  const events = Array.from({ length: 40 }, (_, i) =>
    eventInputSchema.parse(
      i % 4 === 3
        ? { kind: "run", idempotencyKey: `run:r${i}:skipped`, body: { runId: `r${i}`, agentId: "summarizer", role: "compactor", status: "skipped" } }
        : { kind: "source", idempotencyKey: `tg:${i}`, body: { messageId: String(i), author: { id: "7", name: "Ada" }, text: `message ${i}, it's here` } },
    ),
  );
  const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;
  const inserts = events.map(
    (e, i) =>
      `INSERT INTO events (conversation_id, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES (${quote(CONVERSATION)}, ${i + 1}, '${e.kind}', ${quote(e.idempotencyKey)}, 0, ${quote(storedBody(e.kind, e.body))}, '${eventHash(CONVERSATION, e)}', '${AT}')`,
  );
  const seeded = wrangler(config, persist, "d1", "execute", "DB_SHARD_0", "--yes", "--command", [`INSERT INTO conversations (id, created_at) VALUES (${quote(CONVERSATION)}, '${AT}')`, ...inserts].join(";\n"));
  expect(seeded.status, seeded.stderr).toBe(0);
  const turnsBefore = rows(config, persist, "SELECT message_id, seq FROM turns ORDER BY seq");
  expect(turnsBefore).toHaveLength(30);

  // The deployment takes 0031: migrate applies it, copies the log and (local databases) releases `events`.
  copyFileSync(join(ROOT, "migrations/shard", "0031_log.sql"), join(shardDir, "0031_log.sql"));
  for (const file of all.filter((f) => f > "0031_log.sql")) copyFileSync(join(ROOT, "migrations/shard", file), join(shardDir, file));
  const output = migrate(config, persist);
  expect(output).toMatch(/DB_SHARD_0: .*copied the log through id/);
  expect(output).toMatch(/DB_SHARD_0: the log's rows stored before migration 0031 left `events`/);
  const [after] = rows(
    config,
    persist,
    `SELECT (SELECT COUNT(*) FROM events) AS events,
       (SELECT json_group_array(json_array(seq, idempotency_key, lower(hex(hash)), recorded_at)) FROM (SELECT * FROM log ORDER BY seq)) AS log,
       (SELECT json_group_array(json_array(message_id, seq)) FROM (SELECT * FROM turns ORDER BY seq)) AS turns,
       (SELECT json_array(last_seq, texts) FROM conversations) AS head,
       (SELECT per_append FROM high_water_mode) AS per_append,
       (SELECT short FROM log_spelling) AS short,
       (SELECT sparse FROM turn_rows) AS sparse`,
  );
  expect(after?.["events"]).toBe(0);
  expect(JSON.parse(String(after?.["log"]))).toEqual(events.map((e, i) => [i + 1, e.idempotencyKey, eventHash(CONVERSATION, e), Date.parse(AT)]));
  expect(JSON.parse(String(after?.["turns"]))).toEqual(turnsBefore.map((t) => [t["message_id"], t["seq"]]));
  expect(JSON.parse(String(after?.["head"]))).toEqual([40, 30]);
  // 0032 found a conversation (a Worker before it may append): once a row until the release, which
  // a local database takes at once.
  expect(after?.["per_append"]).toBe(1);
  // So did 0033 (a Worker before it may read the log): skipped runs whole until the release.
  expect(after?.["short"]).toBe(1);
  // And 0034 (a Worker before it reads every turn from `turns`): every source writes its fold until the release.
  expect(after?.["sparse"]).toBe(1);

  // Nothing left: migrate and the release alone each find nothing to do.
  const again = migrate(config, persist);
  expect(again).not.toMatch(/copied the log|left `events`/);
  expect(migrate(config, persist, "--release")).not.toMatch(/left `events`/);
});
