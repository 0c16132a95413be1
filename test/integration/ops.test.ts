import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import { opsText } from "../../src/core/ops-text";
import { describe, expect, it } from "vitest";
import { fleetHealth } from "../../src/api/ops";
import { EXPECTED_MIGRATIONS } from "../../src/core/ops";
import { raiseIncident, insertIncidentStatement } from "../../src/storage/shard/incidents";
import { shardsOf } from "../../src/storage/shards";
import type { ErrorBody } from "./helpers";
import { call, freshConversation, json, tokenFor } from "./helpers";

/**
 * The operator's routes (`/v1/ops`): health of every binding, and every shard's incidents in one
 * newest-first list. Both need the `ops` scope (or `*`).
 */

interface Health {
  ok: boolean;
  databases: { binding: string; role: string; reachable: boolean; error?: string; migration: string | null; expectedMigration: string; current: boolean; open?: boolean }[];
  storage: { reachable: boolean; error?: string };
  openShards: string[];
  oldestOpenPlan: unknown;
  failingChains: number;
  incidentsLastHour: number;
}

interface FleetPage {
  incidents: { id: number; conversationId: string; shard: string; agentId: string | null; kind: string; code: string; count: number; lastSeenAt: string; open: boolean }[];
  nextCursor: string | null;
}

describe("migrations", () => {
  it("expects the newest migration of each set, so a new migration without its name in core/ops fails here", () => {
    expect(EXPECTED_MIGRATIONS.control).toBe(env.TEST_MIGRATIONS_CONTROL.at(-1)?.name);
    expect(EXPECTED_MIGRATIONS.shard).toBe(env.TEST_MIGRATIONS_SHARD.at(-1)?.name);
  });
});

describe("GET /v1/ops/health", () => {
  it("lists every database at its expected migration, the bucket, the open shards; only for an operator", async () => {
    const ops = await tokenFor("ops");
    const response = await call("GET", "/v1/ops/health", { token: ops });
    expect(response.status).toBe(200);
    const health = await json<Health>(response);
    expect(health.databases.map((d) => [d.binding, d.role, d.reachable, d.current])).toEqual([
      ["DB", "control", true, true],
      ["DB_SHARD_0", "shard", true, true],
      ["DB_SHARD_1", "shard", true, true],
      ["DB_SHARD_2", "shard", true, true],
    ]);
    expect(health.storage.reachable).toBe(true);
    expect(health.openShards).toEqual(["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2"]);
    expect(health.ok).toBe(true);
    expect((await call("GET", "/v1/ops/health", { token: await tokenFor("*") })).status).toBe(200);
    for (const scopes of [["api:*", "telegram:*"], ["agent:*"]]) {
      const refused = await call("GET", "/v1/ops/health", { token: await tokenFor(...scopes) });
      expect(refused.status).toBe(403);
      expect((await json<ErrorBody>(refused)).error.code).toBe("forbidden");
    }
    expect((await call("GET", "/v1/ops/health")).status).toBe(401);
  });

  it("reports a database that fails, one that hangs and one behind its migrations, without waiting on the hang", async () => {
    // Bindings that answer at once (a resolved promise settles before any timer), so a deadline of
    // 0 ms passes for the hanging one only, whatever the machine's speed.
    const database = (answer: (sql: string) => Promise<unknown>): D1Database => {
      const statement = (sql: string) => ({ bind: () => statement(sql), first: () => answer(sql) });
      return { prepare: statement } as unknown as D1Database;
    };
    const at = (migration: string) => database((sql) => Promise.resolve(sql.includes("d1_migrations") ? { name: migration } : sql.includes("failing") ? { failing: 1, recent: 4 } : null));
    const probed = {
      ...env,
      DB: at(EXPECTED_MIGRATIONS.control),
      DB_SHARD_0: database(() => Promise.reject(new Error("D1_ERROR: Network connection lost."))),
      DB_SHARD_1: database(() => new Promise(() => undefined)),
      DB_SHARD_2: at("0001_event_log.sql"),
      DOCUMENTS: { head: () => Promise.resolve(null) },
    } as unknown as Env;
    const health = await fleetHealth(probed, new Date(), 0);
    expect(health.databases.map((d) => [d.binding, d.reachable, d.error ?? null, d.migration, d.current])).toEqual([
      ["DB", true, null, EXPECTED_MIGRATIONS.control, true],
      ["DB_SHARD_0", false, "unavailable", null, false],
      ["DB_SHARD_1", false, "timeout", null, false],
      ["DB_SHARD_2", true, null, "0001_event_log.sql", false],
    ]);
    expect([health.storage.reachable, health.ok]).toEqual([true, false]);
    // Only the shard that answered is counted, and says so.
    expect([health.failingChains, health.incidentsLastHour, health.shardsCounted]).toEqual([1, 4, 1]);
  });
});

describe("GET /v1/ops/incidents", () => {
  it("lists every shard's incidents newest seen first, a repeat as one row, filtered and paged", async () => {
    const agentId = `ops-${crypto.randomUUID().slice(0, 8)}`;
    const other = `ops-other-${crypto.randomUUID().slice(0, 8)}`;
    const shards = shardsOf(env);
    const when = (minute: number): string => new Date(Date.UTC(2026, 10, 30, 9, minute)).toISOString();
    const seeded: [number, string, string, string][] = [];
    // Five incidents spread over the shards, one of them seen again later (one row, count 2), one of another agent.
    for (const [minute, shardIndex, kind, agent] of [
      [1, 0, "compactor_failure", agentId],
      [2, 1, "delivery_failure", agentId],
      [3, 2, "compactor_failure", agentId],
      [4, 0, "extraction_failure", agentId],
      [5, 1, "compactor_failure", other],
    ] as const) {
      const shard = shards[shardIndex];
      if (shard === undefined) throw new Error("three shards");
      const conversationId = freshConversation("api:ops");
      await insertIncidentStatement(shard.db, { conversationId, agentId: agent, runId: null, kind, code: "c", message: opsText`m`, createdAt: when(minute) }).run();
      seeded.push([minute, shard.name, kind, conversationId]);
    }
    const stalled = freshConversation("api:ops");
    const condition = { conversationId: stalled, agentId, runId: null, kind: "resolver_failure" as const, code: "chain_invalid", message: opsText`m`, createdAt: when(0) };
    await raiseIncident(shards[2]?.db as D1Database, condition);
    await raiseIncident(shards[2]?.db as D1Database, { ...condition, createdAt: when(6) });

    const ops = await tokenFor("ops");
    const read = async (query: string): Promise<FleetPage> => {
      const response = await call("GET", `/v1/ops/incidents?${query}`, { token: ops });
      expect(response.status, await response.clone().text()).toBe(200);
      return json<FleetPage>(response);
    };
    const all = await read(`agent=${agentId}&limit=50`);
    expect(all.incidents.map((i) => [i.conversationId, i.kind, i.count])).toEqual([
      [stalled, "resolver_failure", 2],
      [seeded[3]?.[3], "extraction_failure", 1],
      [seeded[2]?.[3], "compactor_failure", 1],
      [seeded[1]?.[3], "delivery_failure", 1],
      [seeded[0]?.[3], "compactor_failure", 1],
    ]);
    expect(all.incidents[0]?.shard).toBe(shards[2]?.name);
    expect(all.nextCursor).toBeNull();

    // Two at a time: the same rows, once each, in the same order.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: FleetPage = await read(`agent=${agentId}&limit=2${cursor === null ? "" : `&cursor=${cursor}`}`);
      expect(page.incidents.length).toBeLessThanOrEqual(2);
      paged.push(...page.incidents.map((i) => i.conversationId));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(paged).toEqual(all.incidents.map((i) => i.conversationId));

    expect((await read(`agent=${agentId}&cause=compactor_failure`)).incidents.map((i) => i.conversationId)).toEqual([seeded[2]?.[3], seeded[0]?.[3]]);
    expect((await read(`agent=${agentId}&since=${encodeURIComponent(when(3))}`)).incidents).toHaveLength(3);
    expect((await read(`cause=compactor_failure&since=${encodeURIComponent(when(5))}`)).incidents.map((i) => i.agentId)).toContain(other);

    for (const query of ["cursor=nonsense!", "cause=unheard_of", "limit=0", "since=yesterday"]) {
      const refused = await call("GET", `/v1/ops/incidents?${query}`, { token: ops });
      expect(refused.status, query).toBe(400);
    }
    expect((await call("GET", "/v1/ops/incidents", { token: await tokenFor("api:*") })).status).toBe(403);
  });
});

describe("GET /v1/ops/health with the control database down", () => {
  const MONITOR = "mon_" + "k".repeat(40);
  const down = (): D1Database => {
    const fail = () => Promise.reject(new Error("D1_ERROR: Network connection lost."));
    const statement = () => ({ bind: () => statement(), first: fail, all: fail, run: fail, raw: fail });
    return { prepare: statement, batch: fail, exec: fail } as unknown as D1Database;
  };
  const health = async (deployed: Env, token: string): Promise<Response> => {
    const ctx = createExecutionContext();
    const res = await worker.fetch(new Request("http://foldline.test/v1/ops/health", { headers: { authorization: `Bearer ${token}` } }), deployed, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };

  it("tells a monitor holding OPS_MONITOR_TOKEN which database is down; an ops token is 503 (it needs the control database to be checked)", async () => {
    const deployed = { ...env, DB: down(), OPS_MONITOR_TOKEN: MONITOR } as unknown as Env;
    const seen = await health(deployed, MONITOR);
    expect(seen.status).toBe(200);
    const body = await json<Health>(seen);
    expect(body.ok).toBe(false);
    expect(body.databases.find((d) => d.binding === "DB")).toMatchObject({ reachable: false, error: "unavailable" });
    expect(body.databases.filter((d) => d.role === "shard").every((d) => d.reachable)).toBe(true);
    // An ordinary token is checked against the control database, which cannot answer.
    expect((await health(deployed, await tokenFor("ops"))).status).toBe(503);
  });

  it("gives the monitor's secret nothing but health, and nothing at all when it is short or unset", async () => {
    const deployed = { ...env, OPS_MONITOR_TOKEN: MONITOR } as unknown as Env;
    expect((await health(deployed, MONITOR)).status).toBe(200);
    expect((await health(deployed, `${MONITOR}x`)).status).toBe(401);
    const ctx = createExecutionContext();
    const incidents = await worker.fetch(new Request("http://foldline.test/v1/ops/incidents", { headers: { authorization: `Bearer ${MONITOR}` } }), deployed, ctx);
    await waitOnExecutionContext(ctx);
    expect(incidents.status).toBe(401);
    expect((await health({ ...env, OPS_MONITOR_TOKEN: "short" } as unknown as Env, "short")).status).toBe(401);
    expect((await health(env, MONITOR)).status).toBe(401);
  });
});

