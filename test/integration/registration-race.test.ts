import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { pair } from "../support/declarations";
import type { ErrorBody } from "./helpers";
import { call, json, tokenFor } from "./helpers";

/**
 * `PUT /v1/agents/:agent` under concurrency: a revision number is taken by exactly one request.
 * Identical requests racing for it are one registration (201 once, 200 for the rest); a request
 * that lost the race to a different declaration gets a typed 409 and can re-read and retry.
 * Nothing here may answer 500.
 */

let counter = 0;
const freshAgent = (): string => `race-${Date.now().toString(36)}-${counter++}`;

async function revisions(agentId: string): Promise<{ revision: number; epoch_id: string }[]> {
  const { results } = await env.DB.prepare("SELECT revision, epoch_id FROM declarations WHERE agent_id = ? ORDER BY revision").bind(agentId).all<{ revision: number; epoch_id: string }>();
  return results;
}

describe("registration is serialized", () => {
  it("20 identical concurrent PUTs: one 201, nineteen 200, one revision", async () => {
    const agentId = freshAgent();
    const token = await tokenFor("api:race:*", `agent:${agentId}`);
    const body = pair({ agentId, sources: ["api:race:*"] });
    // A warm worker, so the requests below overlap instead of queuing behind a cold start.
    const warm = freshAgent();
    expect((await call("PUT", `/v1/agents/${warm}`, { token: await tokenFor("api:race:*", `agent:${warm}`), body: pair({ agentId: warm, sources: ["api:race:*"] }) })).status).toBe(201);
    const responses = await Promise.all(Array.from({ length: 20 }, () => call("PUT", `/v1/agents/${agentId}`, { token, body })));
    const statuses = responses.map((r) => r.status).sort((a, b) => a - b);
    expect(statuses).toEqual([...Array.from({ length: 19 }, () => 200), 201]);
    const bodies = await Promise.all(responses.map((r) => json<{ revision: number; epoch: { id: string } }>(r)));
    expect(new Set(bodies.map((b) => `${b.revision}:${b.epoch.id}`)).size).toBe(1);
    expect(await revisions(agentId)).toHaveLength(1);
    const sources = await env.DB.prepare("SELECT COUNT(*) AS n FROM declaration_sources WHERE agent_id = ?").bind(agentId).first<{ n: number }>();
    expect(sources?.n).toBe(1);
  });

  it("concurrent different declarations: each revision is taken once, losers get a typed 409, never a 500", async () => {
    const agentId = freshAgent();
    const token = await tokenFor("api:race:*", `agent:${agentId}`);
    const bodies = Array.from({ length: 10 }, (_, i) => pair({ agentId, sources: ["api:race:*"], trigger: 2_000 + i * 100 }));
    const responses = await Promise.all(bodies.map((body) => call("PUT", `/v1/agents/${agentId}`, { token, body })));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s !== 201 && s !== 409)).toEqual([]);
    const created = statuses.filter((s) => s === 201).length;
    expect(created).toBeGreaterThanOrEqual(1);
    for (const response of responses.filter((r) => r.status === 409)) {
      expect((await json<ErrorBody>(response)).error.code).toBe("declaration_conflict");
    }
    const stored = await revisions(agentId);
    expect(stored.map((r) => r.revision)).toEqual(Array.from({ length: created }, (_, i) => i + 1));
    // Every stored revision has its own source rows, none borrowed from a request that lost.
    const sources = await env.DB.prepare("SELECT revision, COUNT(*) AS n FROM declaration_sources WHERE agent_id = ? GROUP BY revision").bind(agentId).all<{ revision: number; n: number }>();
    expect(sources.results.map((r) => [r.revision, r.n])).toEqual(stored.map((r) => [r.revision, 1]));

    // A loser that retries gets its registration in: 201 as a new revision (or 200 if it is current).
    const retried = await call("PUT", `/v1/agents/${agentId}`, { token, body: bodies[0] });
    expect([200, 201]).toContain(retried.status);
  });
});
