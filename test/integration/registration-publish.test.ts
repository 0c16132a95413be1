import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { shardsOf } from "../../src/storage/shards";
import { pair } from "../support/declarations";
import type { ErrorBody } from "./helpers";
import { call, json, tokenFor } from "./helpers";

/**
 * A registration stores the declaration in the control database, then raises every shard's copy of
 * the declarations' revision (`publishRevision`) so the next source append everywhere sees it. A
 * fault between the two must not be answered as a failure of the whole request: the declaration is
 * stored and in force. The answer says so (503 `unavailable` with `Retry-After`, `stored: true`),
 * and the same request re-sent completes it (200: the registration it finds is its own).
 * The fault is at the binding edge: one shard database whose statements fail, as D1 fails.
 */

/** `db` with every statement's call failing the way D1 reports a lost connection, while `faults.left` lasts. */
function failingShard(db: D1Database, faults: { left: number; hit: number }): D1Database {
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(statement, {
      get(target, property) {
        if (property === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        const value: unknown = Reflect.get(target, property, target);
        if ((property === "run" || property === "all" || property === "first" || property === "raw") && typeof value === "function") {
          return (...args: unknown[]) => {
            if (faults.left <= 0) return Reflect.apply(value, target, args) as unknown;
            faults.left -= 1;
            faults.hit += 1;
            return Promise.reject(new Error("D1_ERROR: Network connection lost."));
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  return new Proxy(db, {
    get(target, property) {
      if (property === "prepare") return (query: string) => wrap(target.prepare(query));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function fetchWith(faulty: Env, method: string, path: string, token: string, body: unknown): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`http://foldline.test${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) }),
    faulty,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

async function controlRevision(): Promise<number> {
  return (await env.DB.prepare("SELECT revision FROM declaration_revision WHERE id = 1").first<{ revision: number }>())?.revision ?? 0;
}

let counter = 0;

describe("a registration whose publishing fails after the declaration is stored", () => {
  it("answers 503 with Retry-After saying it was stored, and the same request re-sent completes it with 200", async () => {
    const agentId = `publish-${Date.now().toString(36)}-${counter++}`;
    const token = await tokenFor("api:publish:*", `agent:${agentId}`);
    const body = pair({ agentId, sources: ["api:publish:*"] });
    const [victim] = shardsOf(env).slice(-1);
    if (victim === undefined) throw new Error("no shard bound");
    const faults = { left: 1, hit: 0 };
    const faulty = { ...env, [victim.name]: failingShard(victim.db, faults) } as Env;

    const first = await fetchWith(faulty, "PUT", `/v1/agents/${agentId}`, token, body);
    expect(faults.hit).toBe(1);
    expect(first.status).toBe(503);
    expect(Number(first.headers.get("Retry-After"))).toBeGreaterThan(0);
    const refused = await json<ErrorBody>(first);
    expect(refused.error).toMatchObject({ code: "unavailable", stored: true, revision: 1 });
    expect(refused.error.message).toContain("stored");
    // Stored and in force: the current declaration is the one sent.
    const stored = await json<{ revision: number }>(await call("GET", `/v1/agents/${agentId}`, { token }));
    expect(stored.revision).toBe(1);
    const published = await controlRevision();

    // The same request, the fault gone: the registration it finds is its own (200), and now every
    // shard's copy is raised (copies only go up, so other files' registrations cannot hide a miss).
    const retried = await call("PUT", `/v1/agents/${agentId}`, { token, body });
    expect(retried.status).toBe(200);
    expect((await json<{ revision: number }>(retried)).revision).toBe(1);
    for (const shard of shardsOf(env)) {
      const copy = await shard.db.prepare("SELECT revision FROM declaration_revision WHERE id = 1").first<{ revision: number }>();
      expect(copy?.revision, shard.name).toBeGreaterThanOrEqual(published);
    }
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM declarations WHERE agent_id = ?").bind(agentId).first<{ n: number }>();
    expect(rows?.n).toBe(1);
  });

  it("still raises every healthy shard's copy when one shard fails", async () => {
    const agentId = `publish-${Date.now().toString(36)}-${counter++}`;
    const token = await tokenFor("api:publish:*", `agent:${agentId}`);
    const shards = shardsOf(env);
    const [victim, ...healthy] = shards;
    if (victim === undefined) throw new Error("no shard bound");
    const faulty = { ...env, [victim.name]: failingShard(victim.db, { left: 1, hit: 0 }) } as Env;
    expect((await fetchWith(faulty, "PUT", `/v1/agents/${agentId}`, token, pair({ agentId, sources: ["api:publish:*"] }))).status).toBe(503);
    const published = await controlRevision();
    for (const shard of healthy) {
      const copy = await shard.db.prepare("SELECT revision FROM declaration_revision WHERE id = 1").first<{ revision: number }>();
      expect(copy?.revision, shard.name).toBeGreaterThanOrEqual(published);
    }
  });
});
