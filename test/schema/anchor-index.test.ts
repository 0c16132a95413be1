import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";

/**
 * The log's anchor index (migrations/shard/0011, on `log` since 0031) holds the runs that anchor a chain's head, and
 * nothing else: a skipped run (one per source per compactor serving the conversation, about half
 * of all events) costs no entry in it, while a second anchor for one position of an epoch is still
 * refused. Counted in the migrated schema with SQLite's own page statistics (`dbstat`).
 */

const SHARD = fileURLToPath(new URL("../../migrations/shard/", import.meta.url));

function migrated(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql")).sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
  return db;
}

function append(db: DatabaseSync, seq: number, key: string, body: unknown): void {
  db.prepare("INSERT INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES ((SELECT id FROM conversation_keys WHERE conversation_id = 'api:t:1'), ?, 'run', ?, 0, ?, unhex(?), 0)").run(
    seq,
    key,
    JSON.stringify(body),
    "0".repeat(64),
  );
}

const entries = (db: DatabaseSync): number => Number((db.prepare("SELECT COALESCE(SUM(ncell), 0) AS n FROM dbstat WHERE name = 'log_chain_anchor' AND pagetype = 'leaf'").get() as { n: number }).n);

it("indexes the runs that anchor a head, not the skipped runs, and still refuses a second anchor at one position", () => {
  const db = migrated();
  db.prepare("INSERT INTO conversations (id, created_at) VALUES ('api:t:1', '2026-12-05T00:00:00.000Z')").run();
  for (let seq = 1; seq <= 20; seq++) append(db, seq, `run:pf_c_${seq}:skipped`, { agentId: "c", runId: `pf_c_${seq}`, status: "skipped", role: "compactor" });
  expect(entries(db)).toBe(0);
  const anchor = (position: number) => ({ agentId: "c", runId: `cmp_${position}`, status: "completed", anchor: { epochId: "e1", position, boundaryId: `b${position}` } });
  append(db, 21, "run:cmp_1:completed", anchor(1));
  expect(entries(db)).toBe(1);
  expect(() => append(db, 22, "run:cmp_1b:completed", anchor(1))).toThrow(/UNIQUE/);
  const plan = db.prepare("EXPLAIN QUERY PLAN SELECT body FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?1) AND kind = 'run' AND json_extract(body, '$.anchor.epochId') = ?2 ORDER BY json_extract(body, '$.anchor.position') DESC LIMIT 1").all("api:t:1", "e1");
  expect(plan.map((row) => (row as { detail: string }).detail).join(" ")).toContain("log_chain_anchor");
  db.close();
});
