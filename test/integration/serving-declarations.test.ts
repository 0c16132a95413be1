import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { scopesAllow } from "../../src/core/conversation-id";
import { canonicalRegistration, epochOf, registrationSchema } from "../../src/core/declarations";
import { sha256Hex } from "../../src/core/hash";
import { compactorPrompt } from "../../src/core/prompts";
import { SERVING_CONFIRM_MS } from "../../src/durable/chain-book";
import { insertDeclaration, servingDeclarations } from "../../src/storage/control/declarations";
import { readEventsByKeys } from "../../src/storage/shard/events";
import { pair, register } from "../support/declarations";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, sourceEvent, tokenFor } from "./helpers";

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

describe("the stale window of a registration that stored its declaration but did not publish it", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A declaration written as `registerAgent` writes it, without raising the shards' copies of the revision: a registration that failed half way. */
  async function storeUnpublished(body: unknown): Promise<void> {
    const registration = canonicalRegistration(registrationSchema.parse(body));
    const prompt = compactorPrompt(registration.compactor.outputMode, registration.compactor.prompt);
    const written = await insertDeclaration(env.DB, registration, epochOf(registration, prompt), prompt, sha256Hex(prompt), new Date().toISOString());
    expect(written.kind).toBe("created");
  }

  async function skippedRunFor(conversation: string, compactorId: string, messageId: string): Promise<boolean> {
    const shard = await shardOf(conversation);
    const source = await shard.prepare("SELECT seq FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND kind = 'source' AND json_extract(body, '$.messageId') = ?").bind(conversation, messageId).first<{ seq: number }>();
    const key = `run:pf_${compactorId}_${source?.seq ?? -1}:skipped`;
    return (await readEventsByKeys(shard, conversation, [key])).has(key);
  }

  it(`is at most SERVING_CONFIRM_MS: the object confirms the declarations with the control database once it has passed`, async () => {
    // The clock of this isolate, which the conversation's object shares, fixed and moved by the test:
    // the window is read exactly, never waited for.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    const conversation = freshConversation(`${space}:stale`);
    const agentId = `srv-${run}-stale`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const body = pair({ agentId, sources: [conversation], trigger: 50_000 });
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body })).status).toBe(201);
    const compactorId = body.compactor.id;
    const say = async (messageId: string) => {
      expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(messageId, messageId, `message ${messageId}`) })).status).toBe(201);
    };
    // The object now holds the declarations serving the conversation, confirmed at this instant.
    await say("m1");
    await say("m2");
    expect(await skippedRunFor(conversation, compactorId, "m2")).toBe(true);

    // The agent disabled by a registration that stored its declaration and failed before publishing.
    await storeUnpublished({ agent: { ...body.agent, enabled: false }, compactor: { ...body.compactor, enabled: false } });
    // Inside the window the object trusts what it holds, and the shard's copy agrees with it: the
    // disabled agent's compactor still records this source's preflight.
    vi.setSystemTime(Date.now() + SERVING_CONFIRM_MS - 1_000);
    await say("m3");
    expect(await skippedRunFor(conversation, compactorId, "m3")).toBe(true);

    // Past it, the object asks the control database, finds the agent disabled, and records nothing for it.
    vi.setSystemTime(Date.now() + SERVING_CONFIRM_MS);
    await say("m4");
    expect(await skippedRunFor(conversation, compactorId, "m4")).toBe(false);
  });
});
