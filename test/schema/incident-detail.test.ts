import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";

/**
 * Migration 0024 on a shard that holds incidents written before it: an old row's message, which
 * may quote what a bot or a provider said, moves to `detail`, and the operator's `message` becomes
 * the row's kind and code.
 */

const SHARD = fileURLToPath(new URL("../../migrations/shard/", import.meta.url));
const DETAIL = "0024_incident_detail.sql";

it("moves an old incident's message to its detail, leaving the operator its kind and code", () => {
  const db = new DatabaseSync(":memory:");
  const files = readdirSync(SHARD).filter((f) => f.endsWith(".sql")).sort();
  for (const file of files.filter((f) => f < DETAIL)) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
  db.prepare(
    `INSERT INTO incidents (conversation_id, agent_id, run_id, kind, code, message, created_at, count, last_seen_at, open)
     VALUES ('api:t:1', 'bot', NULL, 'agent_failure', 'bot_unreachable', 'attempt 1: https://bot/reply answered 500: could not answer: Ada: wire 5000 EUR', '2026-12-01T00:00:00.000Z', 1, '2026-12-01T00:00:00.000Z', 0)`,
  ).run();
  db.exec(readFileSync(`${SHARD}${DETAIL}`, "utf8"));
  expect(db.prepare("SELECT kind, code, message, detail FROM incidents").all()).toEqual([
    { kind: "agent_failure", code: "bot_unreachable", message: "agent_failure bot_unreachable", detail: "attempt 1: https://bot/reply answered 500: could not answer: Ada: wire 5000 EUR" },
  ]);
  db.close();
});
