import { describe, expect, it } from "vitest";
import { D1_METER_HEADER, D1_READS_HEADER, D1Meter, meteredD1 } from "../../bench/worker/d1-meter";
import { readBoundaryAuditPage } from "../../src/storage/shard/boundary-audit";
import type { ChainListing } from "../../src/api/chain";
import { register } from "../support/declarations";
import { placedShardOf } from "../support/shards";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * The chain listing reads a page of boundaries, never the whole chain: a chain of ten thousand
 * boundaries (years of a busy group) is listed a page at a time, oldest first, by following
 * `nextAfter`. The rows here are written by hand, as many as a test cannot compact its way to;
 * the listing shows rows as stored, so that is all it needs.
 */

async function chainOfRows(count: number) {
  const conversation = freshConversation("api:listing");
  const agentId = `listing-${crypto.randomUUID().slice(0, 8)}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 100_000, retain: 1_000 })).status).toBe(201);
  expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("one", "one", "Hello.") })).status).toBe(201);
  const shard = await placedShardOf(conversation);
  const epochId = `epoch-${agentId}`;
  const statements: D1PreparedStatement[] = [];
  for (let position = 1; position <= count; position++) {
    const runId = `run-${agentId}-${position}`;
    // Two boundaries share each instant: the listing's order breaks the tie by position.
    const createdAt = new Date(Date.UTC(2026, 0, 1) + Math.floor(position / 2) * 1_000).toISOString();
    statements.push(
      shard
        .prepare(
          `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, 1, ?8)`,
        )
        .bind(runId, conversation, agentId, epochId, position === 1 ? "" : `b-${agentId}-${position - 1}`, `packets/${runId}.json`, "0".repeat(64), createdAt),
      shard
        .prepare(
          `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, 1, ?7, '{}', ?8, ?9)`,
        )
        .bind(`b-${agentId}-${position}`, conversation, agentId, epochId, position, position === 1 ? "" : `b-${agentId}-${position - 1}`, runId, "0".repeat(64), createdAt),
    );
  }
  for (let i = 0; i < statements.length; i += 200) await shard.batch(statements.slice(i, i + 200));
  return { conversation, agentId, token };
}

const listPath = (conversation: string, query: Record<string, string>): string => `/v1/conversations/${encodeURIComponent(conversation)}/chain?${new URLSearchParams(query)}`;

async function listAll(conversation: string, agentId: string, token: string, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let pages = 0;
  for (let after: string | null = null; pages === 0 || after !== null; pages++) {
    const res = await call("GET", listPath(conversation, { agent: agentId, limit: String(limit), ...(after === null ? {} : { after }) }), { token });
    expect(res.status).toBe(200);
    const page = await json<ChainListing & { nextAfter: string | null }>(res);
    expect(page.boundaries.length).toBeLessThanOrEqual(limit);
    ids.push(...page.boundaries.map((b) => b.id));
    after = page.nextAfter;
  }
  return { ids, pages };
}

describe("GET …/chain, a page at a time", () => {
  it("lists a hundred boundaries by default, oldest first, and the rest by following nextAfter", async () => {
    const { conversation, agentId, token } = await chainOfRows(250);
    const first = await json<ChainListing & { nextAfter: string | null }>(await call("GET", listPath(conversation, { agent: agentId }), { token }));
    expect(first.boundaries.map((b) => b.position)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(first.nextAfter).toBe(`b-${agentId}-100`);
    const every = Array.from({ length: 250 }, (_, i) => `b-${agentId}-${i + 1}`);
    expect(await listAll(conversation, agentId, token, 100)).toEqual({ ids: every, pages: 3 });
    expect(await listAll(conversation, agentId, token, 7)).toEqual({ ids: every, pages: 36 });
    // The last page says there is no next one; a cursor past it lists nothing more.
    const last = await json<ChainListing & { nextAfter: string | null }>(await call("GET", listPath(conversation, { agent: agentId, after: `b-${agentId}-250` }), { token }));
    expect(last).toMatchObject({ boundaries: [], nextAfter: null });
  });

  it("refuses a limit outside 1–200 as a query error", async () => {
    const { conversation, agentId, token } = await chainOfRows(1);
    for (const limit of ["0", "201", "x"]) expect((await call("GET", listPath(conversation, { agent: agentId, limit }), { token })).status).toBe(400);
  });

  it("reads a page's rows, not the chain's", { timeout: 60_000 }, async () => {
    const rowsRead = async (count: number): Promise<number> => {
      const { conversation, agentId, token } = await chainOfRows(count);
      const res = await call("GET", listPath(conversation, { agent: agentId, limit: "10", after: `b-${agentId}-${Math.floor(count / 2)}` }), { token, headers: { [D1_METER_HEADER]: "on" } });
      expect(res.status).toBe(200);
      const parts = Object.fromEntries((res.headers.get(D1_READS_HEADER) ?? "").split("; ").map((part) => part.split("=") as [string, string]));
      return Number(parts["rows-read"]);
    };
    const short = await rowsRead(100);
    const long = await rowsRead(2_000);
    expect(long, `${short} rows read for a page of a 100-boundary chain, ${long} of a 2,000-boundary one`).toBeLessThan(short + 20);
  });

  it("hands the paged verify a page's rows with their neighbours and the newest, not the chain's", { timeout: 60_000 }, async () => {
    const page = async (count: number) => {
      const { conversation, agentId } = await chainOfRows(count);
      const meter = new D1Meter();
      meter.arm();
      const read = await readBoundaryAuditPage(meteredD1(await placedShardOf(conversation), meter), conversation, agentId, `epoch-${agentId}`, count / 2, 10);
      return { positions: read.rows.map((row) => row.position), through: read.through, nextAfter: read.nextAfter, rowsRead: meter.take().rowsRead };
    };
    const short = await page(100);
    const long = await page(2_000);
    // The page's ten, the predecessor of its first, and the newest row (the anchor's).
    expect(short).toMatchObject({ positions: [...Array.from({ length: 11 }, (_, i) => 50 + i), 100], through: 60, nextAfter: 60 });
    expect(long).toMatchObject({ positions: [...Array.from({ length: 11 }, (_, i) => 1_000 + i), 2_000], through: 1_010, nextAfter: 1_010 });
    // One statement asking for the four kinds of row with OR read every row of the epoch (2,036
    // rows against 135), and as a UNION ordered by position too (2,077 against 177); now 87 and 87.
    expect(long.rowsRead, `${short.rowsRead} rows read for a page of a 100-boundary chain, ${long.rowsRead} of a 2,000-boundary one`).toBeLessThan(short.rowsRead + 20);
  });

  it("has the whole-chain verify refuse a long chain by counting past its maximum, not the chain", { timeout: 60_000 }, async () => {
    const refusal = async (count: number) => {
      const { conversation, agentId, token } = await chainOfRows(count);
      const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify?agent=${agentId}`, { token, headers: { [D1_METER_HEADER]: "on" } });
      const parts = Object.fromEntries((res.headers.get(D1_READS_HEADER) ?? "").split("; ").map((part) => part.split("=") as [string, string]));
      return { status: res.status, error: ((await res.json()) as { error: Record<string, unknown> }).error, rowsRead: Number(parts["rows-read"]) };
    };
    const short = await refusal(200);
    const long = await refusal(2_000);
    // Counted up to one past the maximum: the refusal says "more than 100" whatever the length.
    for (const refused of [short, long]) expect(refused).toMatchObject({ status: 413, error: { code: "payload_too_large", boundaries: 101, maxBoundaries: 100, paged: "verifyLinks" } });
    // Counting every row read the whole chain's index (2,002 rows against 202 for 200).
    expect(long.rowsRead, `${short.rowsRead} rows read to refuse a 200-boundary chain, ${long.rowsRead} a 2,000-boundary one`).toBeLessThan(short.rowsRead + 20);
  });
});
