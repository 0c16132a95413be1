import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { afterAll, assert, beforeAll, describe, expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { deletePage, putPage } from "../../src/storage/control/memory-pages";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { d1Over } from "./sqlite-d1";

/**
 * A D1 database copied out must open in the SQLite an operator has at hand, not only in the newer
 * one D1 and node:sqlite run. Debian 12's `sqlite3` is SQLite 3.40.1, whose parser has a fixed-size
 * stack: it refuses a schema object whose expressions nest too deep, and since the schema is parsed
 * as the file is opened, one such view makes every statement on the file fail with "malformed
 * database schema (…) - parser stack overflow".
 *
 * Each database is built as D1 builds it (every migration file in name order), seeded through the
 * product's own writers so the triggers run, then read back by a 3.40 shell. The tables, views and
 * FTS5 tables are discovered from `sqlite_master`, never named here: the schema changes, the
 * requirement does not.
 *
 * SCHEMA_MIGRATIONS_DIR replaces `migrations/` (its `control/` and `shard/`), to check a draft of
 * the schema before it is written there; CI never sets it. SQLITE3_BIN names the shell (default
 * `sqlite3` on PATH), which must be SQLite 3.40.
 */

const MIGRATIONS = process.env["SCHEMA_MIGRATIONS_DIR"] ?? fileURLToPath(new URL("../../migrations/", import.meta.url));
const DATABASES = ["control", "shard"] as const;
type Database = (typeof DATABASES)[number];

const SQLITE3 = process.env["SQLITE3_BIN"] ?? "sqlite3";
const HOW_TO_GET_SQLITE3 = "install Debian 12's sqlite3 package (`apt-get install sqlite3`: SQLite 3.40.1), or set SQLITE3_BIN to a SQLite 3.40 shell";

/**
 * The deepest parenthesis nesting a schema object may have. Measured against SQLite 3.40.1
 * (Debian 12's sqlite3): `CREATE VIEW v AS SELECT replace(…(x, 'a', 'b')…) AS y FROM t` opens with
 * 28 nested replace() calls and fails with "parser stack overflow" at 29 (28 and 29 in a trigger's
 * INSERT … SELECT too); inside a CASE or a parenthesised subquery, 27 already fails, as the
 * surrounding grammar uses the same stack. Other constructs (CASE, operators) take stack without
 * parentheses, so the bound leaves a wide margin rather than sitting just under the measured edge.
 */
const MAX_PAREN_DEPTH = 16;

/** Words in Latin, Chinese and Arabic script (with Eastern Arabic digits and a ZWNJ, which the search rules fold). */
const TEXTS = {
  latin: "The lantern by the harbour was relit on Tuesday",
  chinese: "我们明天在港口见面，带上灯笼。",
  arabic: "سأرسل الكتاب إلى المكتبة يوم ٣ مايو، می\u200Cخواهم",
} as const;

/** The word every FTS5 table gets a row with, and the MATCH query seeks. */
const FTS_WORD = "lighthouse";

const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`;

function applyMigrations(file: string, directory: string): DatabaseSync {
  const db = new DatabaseSync(file);
  // D1 enforces foreign keys; the seeding writes through them as the product does.
  db.exec("PRAGMA foreign_keys = ON");
  const names = readdirSync(directory)
    .filter((name) => name.endsWith(".sql"))
    .sort();
  if (names.length === 0) throw new Error(`no migrations in ${directory}`);
  for (const name of names) {
    try {
      db.exec(readFileSync(path.join(directory, name), "utf8"));
    } catch (error) {
      throw new Error(`${directory}/${name}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
  return db;
}

/** The log of one conversation: every event kind (and both delivery outcomes, both corrections), in three scripts. */
function conversationEvents(): EventInput[] {
  const ada = { id: "u:ada", name: "Ada" };
  const li = { id: "u:li", name: "李明" };
  const noor = { id: "u:noor", name: "نور" };
  const events: unknown[] = [
    { kind: "source", idempotencyKey: "source:m1", body: { messageId: "m1", author: ada, text: TEXTS.latin } },
    { kind: "source", idempotencyKey: "source:m2", body: { messageId: "m2", author: li, text: TEXTS.chinese } },
    { kind: "source", idempotencyKey: "source:m3", body: { messageId: "m3", author: noor, text: TEXTS.arabic, replyToMessageId: "m2" } },
    { kind: "run", idempotencyKey: "run:r1", body: { runId: "r1", agentId: "helper", role: "agent", status: "started" } },
    { kind: "proposal", idempotencyKey: "proposal:p1", body: { proposalId: "p1", agentId: "helper", runId: "r1", replyToMessageId: "m3", text: "تم، سأتذكر ذلك" } },
    { kind: "delivery", idempotencyKey: "delivery:p1", body: { status: "delivered", proposalId: "p1", externalMessageId: "9001" } },
    { kind: "proposal", idempotencyKey: "proposal:p2", body: { proposalId: "p2", agentId: "helper", replyToMessageId: "m2", text: "好的，明天见。" } },
    { kind: "delivery", idempotencyKey: "delivery:p2", body: { status: "failed", proposalId: "p2", reason: "chat unavailable" } },
    { kind: "correction", idempotencyKey: "edit:m2", body: { action: "edit", targetMessageId: "m2", text: "我们后天在港口见面。", editedAt: "2026-01-02T03:04:05.678Z" } },
    { kind: "source", idempotencyKey: "source:m4", sensitive: true, body: { messageId: "m4", author: ada, text: "My locker code is 4411" } },
    { kind: "correction", idempotencyKey: "delete:m4", body: { action: "delete", targetMessageId: "m4" } },
  ];
  // Parsed by the log's own schema, so a body shape that drifts from src/core/events.ts fails here.
  return events.map((event) => eventInputSchema.parse(event));
}

async function seedShard(db: DatabaseSync): Promise<void> {
  const d1 = d1Over(db);
  const conversationId = "api:schema-compat";
  const planned = conversationEvents().map((input, i) => ({ input, hash: eventHash(conversationId, input), seq: i + 1 }));
  const { applied } = await insertEvents(d1, conversationId, planned, "2026-01-02T03:04:05.000Z");
  expect(applied.every(Boolean), "every seeded event was appended").toBe(true);
}

async function seedControl(db: DatabaseSync): Promise<void> {
  const d1 = d1Over(db);
  const now = new Date("2026-01-02T03:05:00.000Z");
  for (const [script, content] of Object.entries(TEXTS)) await putPage(d1, "helper", `people/${script}.md`, content, now);
  await putPage(d1, "helper", "people/gone.md", TEXTS.latin, now);
  await deletePage(d1, "helper", "people/gone.md", now);
}

/** `USING fts5(`: an FTS5 table, not an fts5vocab table over one (which takes no rows and no MATCH). */
const FTS5_MODULE = /\bUSING\s+fts5\s*\(/i;

/** Every FTS5 table of the schema, with its columns. */
function ftsTables(db: DatabaseSync): { name: string; columns: string[] }[] {
  const tables = db
    .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name")
    .all()
    .filter((row) => FTS5_MODULE.test(String(row["sql"])));
  return tables.map((row) => {
    const name = String(row["name"]);
    const columns = db
      .prepare(`PRAGMA table_info(${quote(name)})`)
      .all()
      .map((column) => String(column["name"]));
    return { name, columns };
  });
}

/** A row in every FTS5 table, each column holding the marker word and text in each script. */
function seedFts(db: DatabaseSync): void {
  for (const { name, columns } of ftsTables(db)) {
    const value = `${FTS_WORD} ${TEXTS.latin} ${TEXTS.chinese} ${TEXTS.arabic}`;
    db.prepare(`INSERT INTO ${quote(name)} (${columns.map(quote).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`).run(...columns.map(() => value));
  }
}

/** The parenthesis nesting of SQL text, outside string literals, quoted identifiers and comments. */
function parenDepth(sql: string): number {
  let depth = 0;
  let deepest = 0;
  let i = 0;
  const skipTo = (end: string, from: number): number => {
    const at = sql.indexOf(end, from);
    return at === -1 ? sql.length : at + end.length;
  };
  while (i < sql.length) {
    const c = sql[i];
    const next = sql[i + 1];
    if (c === "'" || c === '"' || c === "`") {
      // A doubled quote inside a literal is the quote itself: the literal goes on past it.
      let j = i + 1;
      for (;;) {
        j = skipTo(c, j);
        if (j < sql.length && sql[j] === c) j += 1;
        else break;
      }
      i = j;
    } else if (c === "[") i = skipTo("]", i + 1);
    else if (c === "-" && next === "-") i = skipTo("\n", i + 2);
    else if (c === "/" && next === "*") i = skipTo("*/", i + 2);
    else {
      if (c === "(") deepest = Math.max(deepest, ++depth);
      else if (c === ")") depth -= 1;
      i += 1;
    }
  }
  return deepest;
}

interface Shell {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the 3.40 shell: no ~/.sqliterc, read-only, so it can neither change nor be changed by the file's reader. */
function sqlite3(args: readonly string[]): Shell {
  const run = spawnSync(SQLITE3, args, { encoding: "utf8" });
  if (run.error !== undefined) throw new Error(`cannot run ${SQLITE3} (${run.error.message}): ${HOW_TO_GET_SQLITE3}`);
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** The statement's output, or what sqlite3 printed when it failed. */
function query(file: string, sql: string): { out: string } | { error: string } {
  const run = sqlite3(["-init", "/dev/null", "-batch", "-bail", "-readonly", file, sql]);
  if (run.status !== 0 || run.stderr.trim() !== "") return { error: (run.stderr.trim() || run.stdout.trim() || `exit ${String(run.status)}`).replace(/^Error: (in prepare, )?/, "") };
  return { out: run.stdout.trim() };
}

/**
 * Fails with what sqlite3 said, each message once with the statements it answered (a schema the
 * shell cannot parse fails every statement alike).
 */
function expectNoFailures(what: string, total: number, failures: readonly { statement: string; error: string }[]): void {
  if (failures.length === 0) return;
  const byError = new Map<string, string[]>();
  for (const { statement, error } of failures) byError.set(error, [...(byError.get(error) ?? []), statement]);
  const lines = [...byError].map(([error, statements]) => `  ${error}\n    in: ${statements.slice(0, 3).join("; ")}${statements.length > 3 ? `; … ${String(statements.length - 3)} more` : ""}`);
  assert.fail([`${SQLITE3} failed ${String(failures.length)} of ${String(total)} statements ${what}:`, ...lines].join("\n"));
}

/** A database built from its migrations: the file, and its schema as node:sqlite reads it. */
interface Built {
  readonly file: string;
  readonly db: DatabaseSync;
  readonly sql: readonly { type: string; name: string; sql: string }[];
}

let directory = "";
const built = new Map<Database, Built>();

function builtDatabase(name: Database): Built {
  const database = built.get(name);
  if (database === undefined) throw new Error(`the ${name} database was not built`);
  return database;
}

// Migrated only: the static check reads the schema whether or not the seeding below succeeds.
beforeAll(() => {
  directory = mkdtempSync(path.join(tmpdir(), "foldline-schema-"));
  for (const name of DATABASES) {
    const file = path.join(directory, `${name}.sqlite`);
    const db = applyMigrations(file, path.join(MIGRATIONS, name));
    const sql = db
      .prepare("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")
      .all()
      .map((row) => ({ type: String(row["type"]), name: String(row["name"]), sql: String(row["sql"]) }));
    built.set(name, { file, db, sql });
  }
});

afterAll(() => {
  for (const { db } of built.values()) if (db.isOpen) db.close();
  if (directory !== "") rmSync(directory, { recursive: true, force: true });
});

// Its own test, outside the seeded databases' suite: a wrong shell is reported even when seeding fails.
it("checks with a SQLite 3.40 shell, so a newer one cannot pass for it", () => {
  const run = sqlite3(["--version"]);
  expect(run.stdout, `${SQLITE3} --version says ${JSON.stringify(run.stdout.trim() || run.stderr.trim())}, not SQLite 3.40: ${HOW_TO_GET_SQLITE3}`).toMatch(/^3\.40\.\d+ /);
});

describe("a copied-out D1 database opens in SQLite 3.40 (Debian 12's sqlite3)", () => {
  const contents = new Map<Database, { objects: string[]; fts: string[] }>();

  // Seeded, then closed, so the shell reads the file as D1 would hand it over.
  beforeAll(async () => {
    for (const name of DATABASES) {
      const { db } = builtDatabase(name);
      try {
        await (name === "shard" ? seedShard(db) : seedControl(db));
        seedFts(db);
      } catch (error) {
        throw new Error(`seeding the ${name} database: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      const objects = db
        .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY type, name")
        .all()
        .map((row) => String(row["name"]));
      contents.set(name, { objects, fts: ftsTables(db).map((table) => table.name) });
      db.close();
    }
  });

  const contentsOf = (name: Database): { objects: string[]; fts: string[] } => {
    const found = contents.get(name);
    if (found === undefined) throw new Error(`the ${name} database was not seeded`);
    return found;
  };

  describe.each(DATABASES)("the %s database", (name) => {
    it("passes PRAGMA integrity_check", () => {
      const statement = "PRAGMA integrity_check";
      const result = query(builtDatabase(name).file, statement);
      if ("error" in result) expectNoFailures(`checking the integrity of the ${name} database`, 1, [{ statement, error: result.error }]);
      else expect(result.out).toBe("ok");
    });

    it("counts the rows of every table and view", () => {
      const { objects } = contentsOf(name);
      expect(objects.length).toBeGreaterThan(0);
      const failures = objects.flatMap((object) => {
        const statement = `SELECT count(*) FROM ${quote(object)}`;
        const result = query(builtDatabase(name).file, statement);
        return "error" in result ? [{ statement, error: result.error }] : [];
      });
      expectNoFailures(`counting the rows of the tables and views of the ${name} database`, objects.length, failures);
    });

    it("answers a MATCH on every FTS5 table", () => {
      const { fts } = contentsOf(name);
      expect(fts.length, "the schema has FTS5 tables to check").toBeGreaterThan(0);
      const failures = fts.flatMap((table) => {
        const statement = `SELECT count(*) FROM ${quote(table)} WHERE ${quote(table)} MATCH '${FTS_WORD}'`;
        const result = query(builtDatabase(name).file, statement);
        if ("error" in result) return [{ statement, error: result.error }];
        // The row seedFts wrote carries the word in every column, so an index read back whole finds it.
        return Number(result.out) >= 1 ? [] : [{ statement, error: `found ${result.out} rows, expected the seeded one` }];
      });
      expectNoFailures(`querying the FTS5 tables of the ${name} database`, fts.length, failures);
    });
  });
});

describe("the schema's expressions stay within SQLite 3.40's parser stack", () => {
  it.each(DATABASES)(`no object of the %s database nests parentheses deeper than ${String(MAX_PAREN_DEPTH)}`, (name) => {
    const depths = builtDatabase(name).sql.map(({ type, name: object, sql }) => ({ object: `${type} ${object}`, depth: parenDepth(sql) })).sort((a, b) => b.depth - a.depth);
    const [deepest] = depths;
    if (deepest === undefined) assert.fail(`the ${name} database has no schema objects`);
    const over = depths.filter(({ depth }) => depth > MAX_PAREN_DEPTH);
    if (over.length > 0) {
      assert.fail(
        `the deepest object of the ${name} database is ${deepest.object}, ${String(deepest.depth)} parentheses deep; ` +
          `over ${String(MAX_PAREN_DEPTH)} (SQLite 3.40.1's parser stack overflows at 27–29 nested calls): ` +
          over.map(({ object, depth }) => `${object} (${String(depth)})`).join(", "),
      );
    }
  });
});
