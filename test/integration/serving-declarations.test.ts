import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { scopesAllow } from "../../src/core/conversation-id";
import { servingDeclarations } from "../../src/storage/compaction-store";
import { pair, register } from "../support/declarations";
import { call, tokenFor } from "./helpers";

/**
 * Which declarations serve a conversation, found through `declaration_sources` (migration 0007)
 * rather than by parsing every agent's declaration: the query must agree with `scopesAllow` on
 * every pattern form, and follow the newest revision only.
 */

const run = Date.now().toString(36);
const space = `api:srv-${run}`;

async function served(conversationId: string, agents: readonly string[]): Promise<string[]> {
  const ids = (await servingDeclarations(env.DB, conversationId)).map((d) => d.agentId);
  return ids.filter((id) => agents.includes(id)).sort();
}

describe("servingDeclarations", () => {
  it("agrees with scopesAllow for exact ids, prefixes, a prefix with SQL wildcard characters, and every conversation", async () => {
    const token = await tokenFor(`${space}*`, `api:elsewhere-${run}:*`, "agent:*");
    const patterns: Record<string, string[]> = {
      [`srv-${run}-exact`]: [`${space}:a`],
      [`srv-${run}-prefix`]: [`${space}:*`],
      [`srv-${run}-narrow`]: [`${space}:a*`],
      [`srv-${run}-two`]: [`${space}:b`, `${space}:c*`],
      [`srv-${run}-wild`]: [`${space}:x_%*`],
      [`srv-${run}-other`]: [`api:elsewhere-${run}:*`],
    };
    for (const [agentId, sources] of Object.entries(patterns)) {
      expect((await register(token, { agentId, sources })).status).toBe(201);
    }
    const agents = Object.keys(patterns);
    const conversations = [`${space}:a`, `${space}:ab`, `${space}:b`, `${space}:bb`, `${space}:c`, `${space}:cz`, `${space}:x_%`, `${space}:xy%`, `${space}:x_%q`, `${space}`, `api:elsewhere-${run}:1`];
    for (const conversation of conversations) {
      const expected = agents.filter((id) => scopesAllow(patterns[id] ?? [], conversation)).sort();
      expect(await served(conversation, agents), conversation).toEqual(expected);
    }
    // The wildcard characters of SQL are literal in a pattern.
    expect(await served(`${space}:xy%`, agents)).not.toContain(`srv-${run}-wild`);
    expect(await served(`${space}:x_%q`, agents)).toContain(`srv-${run}-wild`);
  });

  it("follows the newest revision: sources a declaration dropped no longer serve", async () => {
    const token = await tokenFor(`${space}*`, "agent:*");
    const agentId = `srv-${run}-moved`;
    expect((await register(token, { agentId, sources: [`${space}:old`] })).status).toBe(201);
    expect(await served(`${space}:old`, [agentId])).toEqual([agentId]);
    expect((await register(token, { agentId, sources: [`${space}:new`] })).status).toBe(201);
    expect(await served(`${space}:old`, [agentId])).toEqual([]);
    const [declaration] = (await servingDeclarations(env.DB, `${space}:new`)).filter((d) => d.agentId === agentId);
    expect(declaration?.revision).toBe(2);
  });

  it("lists a disabled declaration (callers decide what disabled means) and stores one row per distinct source", async () => {
    const token = await tokenFor(`${space}*`, "agent:*");
    const agentId = `srv-${run}-off`;
    const body = pair({ agentId, sources: [`${space}:off`, `${space}:off`] });
    const disabled = { agent: { ...body.agent, enabled: false }, compactor: { ...body.compactor, enabled: false } };
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: disabled })).status).toBe(201);
    expect(await served(`${space}:off`, [agentId])).toEqual([agentId]);
    const rows = await env.DB.prepare("SELECT pattern FROM declaration_sources WHERE agent_id = ?").bind(agentId).all<{ pattern: string }>();
    expect(rows.results.map((r) => r.pattern)).toEqual([`${space}:off`]);
  });

  it("backfills the revisions stored before the index existed (the migration's own statement)", async () => {
    const agentId = `srv-${run}-legacy`;
    const registration = pair({ agentId, sources: [`${space}:legacy*`] });
    // A revision as an older deployment stored it: no source rows.
    await env.DB.prepare(
      `INSERT INTO declarations (agent_id, revision, compactor_id, compactor_version, fingerprint, epoch_id, registration, prompt, prompt_hash, created_at)
       VALUES (?, 1, ?, 'v', ?, ?, ?, 'p', ?, ?)`,
    )
      .bind(agentId, `${agentId}.compactor`, "f".repeat(64), `epoch-${agentId}`, JSON.stringify(registration), "0".repeat(64), new Date().toISOString())
      .run();
    expect(await served(`${space}:legacy-1`, [agentId])).toEqual([]);
    const migration = env.TEST_MIGRATIONS_CONTROL.find((m) => m.name.startsWith("0007_"));
    const backfill = migration?.queries.find((q) => q.includes("INSERT OR IGNORE INTO declaration_sources"));
    expect(backfill).toBeDefined();
    await env.DB.prepare(backfill ?? "").run();
    expect(await served(`${space}:legacy-1`, [agentId])).toEqual([agentId]);
    expect(await served(`${space}:other`, [agentId])).toEqual([]);
  });

  it("keeps source rows immutable", async () => {
    await expect(env.DB.prepare("UPDATE declaration_sources SET prefix = '' WHERE agent_id LIKE ?").bind(`srv-${run}-%`).run()).rejects.toThrow(/immutable/);
    await expect(env.DB.prepare("DELETE FROM declaration_sources WHERE agent_id LIKE ?").bind(`srv-${run}-%`).run()).rejects.toThrow(/immutable/);
  });
});
