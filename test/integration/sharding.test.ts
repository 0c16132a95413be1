import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { conversationStub } from "../../src/durable/stub";
import { D1_METER_HEADER, D1_READS_HEADER } from "../../bench/worker/d1-meter";
import { listConversations } from "../../src/storage/inspector-store";
import type { Shard } from "../../src/storage/shards";
import { chooseShard, findPlacement, forgetPlacements, openShards, placeConversation, readPlacement, shardMap, shardsOf } from "../../src/storage/shards";
import { register } from "../support/declarations";
import { shardOf } from "../support/shards";
import { waitFor } from "../support/chain";
import { restart } from "../support/anchored-chain";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * Conversations on shard databases (src/storage/shards.ts): each is placed on one of the bound
 * shards the first time it is written, the placement is a row of the control database that never
 * changes, every row of the conversation lands on that shard, and no request about it reads any
 * other shard. The tests run three shards (vitest.config.ts).
 */

const run = Date.now().toString(36);
let agents = 0;
const freshAgent = (): string => `shard-${run}-${agents++}`;

/** Per-conversation tables: each must hold the conversation's rows on its shard and none elsewhere. */
const CONVERSATION_TABLES = ["conversations", "log", "activations", "compaction_plans", "boundaries", "incidents", "turns", "turn_terms", "extraction_runs", "extracted_versions", "extracted_sources"] as const;

/** How each table names the conversation its rows belong to. */
const ofConversation = (table: (typeof CONVERSATION_TABLES)[number]): string =>
  table === "conversations"
    ? "id = ?"
    : table === "turn_terms"
      ? "rowid BETWEEN ((SELECT id FROM conversation_keys WHERE conversation_id = ?1) << 32) AND (((SELECT id FROM conversation_keys WHERE conversation_id = ?1) << 32) | 4294967295)"
      : table === "extracted_sources"
        ? "page IN (SELECT id FROM extracted_pages WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?))"
        : table === "extracted_versions" || table === "turns" || table === "log"
          ? "conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?)"
          : "conversation_id = ?";

const talk = (i: number): string =>
  `Message ${i}: guest ${i} prefers ${i % 2 === 0 ? "Lisbon" : "Porto"} for the offsite, room ${100 + i}, budget ${1000 + i * 10} euros.`;

/** A conversation id that a fresh placement puts on `shard` (placement hashes the id). */
function conversationOn(shard: string, prefix = "api:shard"): string {
  const open = openShards(env);
  for (;;) {
    const id = freshConversation(prefix);
    if (chooseShard(id, open).name === shard) return id;
  }
}

async function say(token: string, conversation: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const res = await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, talk(i)) });
    expect(res.status, await res.clone().text()).toBe(201);
  }
}

/** A conversation with an agent whose chain has settled at least `boundaries` boundaries. */
async function compacted(conversation: string, boundaries: number) {
  const agentId = freshAgent();
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000 })).status).toBe(201);
  await say(token, conversation, 0, 30);
  await waitFor(async () => {
    const state = await conversationStub(env, conversation).describeChain(conversation, agentId);
    if (state?.openRunId !== null) return undefined;
    const row = await (await shardOf(conversation)).prepare("SELECT COUNT(*) AS n FROM boundaries WHERE conversation_id = ?").bind(conversation).first<{ n: number }>();
    return (row?.n ?? 0) >= boundaries ? true : undefined;
  }, `${boundaries} boundaries`);
  return { agentId, token };
}

async function rowsPerShard(conversation: string): Promise<Record<string, Record<string, number>>> {
  const counts: Record<string, Record<string, number>> = {};
  for (const shard of shardsOf(env)) {
    const statements = CONVERSATION_TABLES.map((table) => shard.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE ${ofConversation(table)}`).bind(conversation));
    const results = await shard.db.batch<{ n: number }>(statements);
    counts[shard.name] = Object.fromEntries(CONVERSATION_TABLES.map((table, i) => [table, results[i]?.results[0]?.n ?? 0]));
  }
  return counts;
}

/** `env` as a Worker that binds only the first `n` shards sees it (before more were added). */
function envWithShards(n: number): Env {
  const bound = { ...(env as unknown as Record<string, unknown>) };
  for (const shard of shardsOf(env).slice(n)) delete bound[shard.name];
  return bound as unknown as Env;
}

/**
 * A control database restored from before `conversation` began: its placement row is gone (the
 * guard that refuses a delete is lifted around the delete and put back).
 */
async function losePlacementRow(conversation: string): Promise<void> {
  const guard = await env.DB.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'conversation_placements' AND sql LIKE '%BEFORE DELETE%'").first<{ name: string; sql: string }>();
  if (guard === null) throw new Error("no delete guard on conversation_placements");
  await env.DB.batch([
    env.DB.prepare(`DROP TRIGGER ${guard.name}`),
    env.DB.prepare("DELETE FROM conversation_placements WHERE conversation_id = ?").bind(conversation),
    env.DB.prepare(guard.sql),
  ]);
}

describe("conversations on shards", () => {
  it("runs the tests on three shards", () => {
    expect(shardsOf(env).map((s) => s.name)).toEqual(["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2"]);
  });

  it("puts every row of a conversation on its shard, and none on any other: events, plans, boundaries, activations, the turn index, extraction runs, extracted memory", async () => {
    const conversation = conversationOn("DB_SHARD_2");
    const { agentId, token } = await compacted(conversation, 2);
    // An edit: the one message whose turn `turns` keeps (the others are read from their rows in the log).
    const edited = await call("POST", eventsPath(conversation), { token, body: { kind: "correction", idempotencyKey: "edit-m3", body: { action: "edit", targetMessageId: "3", text: talk(3).replace("Porto", "Braga") } } });
    expect(edited.status, await edited.clone().text()).toBe(201);
    // Each settled boundary is extracted into the agent's memory (offline here), off the request path.
    await waitFor(async () => {
      const row = await (await shardOf(conversation)).prepare("SELECT COUNT(*) AS n FROM extraction_runs WHERE conversation_id = ?").bind(conversation).first<{ n: number }>();
      return (row?.n ?? 0) >= 2 ? true : undefined;
    }, "2 extraction runs");
    const placed = await env.DB.prepare("SELECT shard FROM conversation_placements WHERE conversation_id = ?").bind(conversation).first<{ shard: string }>();
    expect(placed?.shard).toBe("DB_SHARD_2");
    const counts = await rowsPerShard(conversation);
    const home = counts["DB_SHARD_2"] ?? {};
    expect(home["conversations"]).toBe(1);
    expect(home["log"]).toBeGreaterThanOrEqual(30);
    expect(home["activations"]).toBe(1);
    expect(home["compaction_plans"]).toBeGreaterThanOrEqual(2);
    expect(home["boundaries"]).toBeGreaterThanOrEqual(2);
    expect(home["turns"]).toBe(1);
    expect(home["turn_terms"]).toBe(31);
    expect(home["extraction_runs"]).toBeGreaterThanOrEqual(2);
    // What extraction wrote is the conversation's memory, kept beside its log, each fact naming its source here; none in the control database.
    expect(home["extracted_versions"]).toBeGreaterThan(0);
    expect(home["extracted_sources"]).toBeGreaterThan(0);
    const sourced = await env.DB.prepare("SELECT COUNT(*) AS n FROM memory_provenance WHERE agent_id = ? AND conversation_id = ?").bind(agentId, conversation).first<{ n: number }>();
    expect(sourced?.n).toBe(0);
    for (const other of ["DB_SHARD_0", "DB_SHARD_1"]) expect(Object.values(counts[other] ?? {}).every((n) => n === 0), other).toBe(true);
    // The control database holds no per-conversation table at all.
    const tables = await env.DB.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all<{ name: string }>();
    for (const table of CONVERSATION_TABLES) expect(tables.results.map((t) => t.name)).not.toContain(table);
    // The conversation's object keeps its placement in its own storage.
    const recorded = await runInDurableObject(conversationStub(env, conversation), (_instance, state) => state.storage.get<string>("shard"));
    expect(recorded).toBe("DB_SHARD_2");
  });

  it("keeps a placement across restarts: the row never changes, and re-reading it gives the same shard", async () => {
    const conversation = freshConversation("api:shard");
    const token = await tokenFor(conversation);
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") })).status).toBe(201);
    const first = await findPlacement(env, conversation);
    expect(first).toMatch(/^DB_SHARD_[0-2]$/);
    // A new isolate knows nothing: it reads the row again.
    forgetPlacements();
    expect(await findPlacement(env, conversation)).toBe(first);
    expect((await placeConversation(env, conversation)).name).toBe(first);
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM conversation_placements WHERE conversation_id = ?").bind(conversation).first<{ n: number }>();
    expect(rows?.n).toBe(1);
    // The row cannot be moved or removed, by anyone with the database.
    await expect(env.DB.prepare("UPDATE conversation_placements SET shard = 'DB_SHARD_0' WHERE conversation_id = ?").bind(conversation).run()).rejects.toThrow(/never moves/);
    await expect(env.DB.prepare("DELETE FROM conversation_placements WHERE conversation_id = ?").bind(conversation).run()).rejects.toThrow(/never moves/);
    // The object restarts too (a throw inside blockConcurrencyWhile resets it, as an eviction does):
    // the fresh instance finds its shard in its own storage, and the next append lands beside the first.
    const evicted = await runInDurableObject(conversationStub(env, conversation), (_instance, state) =>
      state.blockConcurrencyWhile(() => Promise.reject(new Error("evicted by the test"))),
    ).then(
      () => false,
      () => true,
    );
    expect(evicted).toBe(true);
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("k2", "2", "again") })).status).toBe(201);
    expect(await runInDurableObject(conversationStub(env, conversation), (_instance, state) => state.storage.get<string>("shard"))).toBe(first);
    const home = shardsOf(env).find((s) => s.name === first);
    const stored = await home?.db.prepare("SELECT COUNT(*) AS n FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?)").bind(conversation).first<{ n: number }>();
    expect(stored?.n).toBe(2);
    const log = await json<{ events: { seq: number }[] }>(await call("GET", eventsPath(conversation), { token }));
    expect(log.events.map((e) => e.seq)).toEqual([1, 2]);
  });

  it("moves nothing when a shard is added: old conversations stay, new ones spread over every shard", async () => {
    const two = envWithShards(2);
    expect(shardsOf(two).map((s) => s.name)).toEqual(["DB_SHARD_0", "DB_SHARD_1"]);
    const before = Array.from({ length: 60 }, () => freshConversation("api:grow"));
    const placedBefore = new Map<string, string>();
    for (const id of before) placedBefore.set(id, (await placeConversation(two, id)).name);
    expect(new Set(placedBefore.values())).toEqual(new Set(["DB_SHARD_0", "DB_SHARD_1"]));

    // DB_SHARD_2 is bound from now on.
    forgetPlacements();
    for (const id of before) expect((await placeConversation(env, id)).name).toBe(placedBefore.get(id));
    const after = Array.from({ length: 60 }, () => freshConversation("api:grow"));
    const spread: Record<string, number> = {};
    for (const id of after) {
      const shard = (await placeConversation(env, id)).name;
      spread[shard] = (spread[shard] ?? 0) + 1;
    }
    expect(Object.keys(spread).sort()).toEqual(["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2"]);
    for (const n of Object.values(spread)) expect(n).toBeGreaterThanOrEqual(5);
  });

  it("places new conversations only on open shards; a closed shard keeps serving what it holds", async () => {
    const conversation = conversationOn("DB_SHARD_1");
    const token = await tokenFor(conversation);
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "before closing") })).status).toBe(201);
    const closed = { ...env, SHARDS_CLOSED: "DB_SHARD_1" } as unknown as Env;
    expect(openShards(closed).map((s) => s.name)).toEqual(["DB_SHARD_0", "DB_SHARD_2"]);
    for (let i = 0; i < 40; i++) expect((await placeConversation(closed, freshConversation("api:closed"))).name).not.toBe("DB_SHARD_1");
    forgetPlacements();
    expect((await placeConversation(closed, conversation)).name).toBe("DB_SHARD_1");
    // Every shard closed: a new conversation is refused with a typed configuration error, never placed at random.
    const none = { ...env, SHARDS_CLOSED: "DB_SHARD_0,DB_SHARD_1,DB_SHARD_2" } as unknown as Env;
    await expect(placeConversation(none, freshConversation("api:closed"))).rejects.toThrow(/no open shard/);
  });

  it("finds a conversation whose placement row was lost on the shard that holds it, closed or not, and places it back there", async () => {
    const conversation = conversationOn("DB_SHARD_1");
    const token = await tokenFor(conversation);
    for (const i of [1, 2, 3]) expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`k${i}`, String(i), `message ${i}`) })).status).toBe(201);
    await losePlacementRow(conversation);
    forgetPlacements();
    // Its shard is closed since: the open shards would choose another.
    const closed = { ...env, SHARDS_CLOSED: "DB_SHARD_1" } as unknown as Env;
    expect((await readPlacement(closed, conversation)).shard.name).toBe("DB_SHARD_1");
    expect(await findPlacement(closed, conversation)).toBeUndefined();
    expect((await placeConversation(closed, conversation)).name).toBe("DB_SHARD_1");
    forgetPlacements();
    expect(await findPlacement(closed, conversation)).toBe("DB_SHARD_1");
  });

  it("writes a lost placement row back with the next write, through the conversation's object, which keeps its shard", async () => {
    const conversation = conversationOn("DB_SHARD_1");
    const token = await tokenFor(conversation);
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "message 1") })).status).toBe(201);
    await losePlacementRow(conversation);
    forgetPlacements();
    // The object wakes again (an eviction, a deploy) with its shard in its own storage.
    await restart(conversation);
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("k2", "2", "message 2") })).status).toBe(201);
    const row = await env.DB.prepare("SELECT shard FROM conversation_placements WHERE conversation_id = ?").bind(conversation).first<{ shard: string }>();
    expect(row).toEqual({ shard: "DB_SHARD_1" });
  });

  it("refuses, typed, to place a conversation with no placement row that two shards hold", async () => {
    const conversation = freshConversation("api:split");
    for (const name of ["DB_SHARD_0", "DB_SHARD_2"]) {
      await shardMap(env).get(name)?.prepare("INSERT INTO conversations (id, created_at) VALUES (?, ?)").bind(conversation, new Date().toISOString()).run();
    }
    await expect(placeConversation(env, conversation)).rejects.toThrow(/no placement and rows on DB_SHARD_0, DB_SHARD_2/);
    await expect(readPlacement(env, conversation)).rejects.toMatchObject({ name: "ShardConfigurationError", reason: "split", shard: "DB_SHARD_0, DB_SHARD_2" });
    expect(await findPlacement(env, conversation)).toBeUndefined();
  });

  it("refuses, typed, to serve a conversation placed on a shard the Worker does not bind", async () => {
    const conversation = conversationOn("DB_SHARD_2");
    await placeConversation(env, conversation);
    forgetPlacements();
    await expect(placeConversation(envWithShards(2), conversation)).rejects.toThrow(/lives on DB_SHARD_2, which this Worker does not bind/);
  });

  it("verifies each conversation's chain on its own shard, and a forgery on one shard fails only that chain", async () => {
    const first = conversationOn("DB_SHARD_0");
    const second = conversationOn("DB_SHARD_1");
    const [a, b] = await Promise.all([compacted(first, 2), compacted(second, 2)]);
    const verify = async (conversation: string, agentId: string, token: string) =>
      json<{ valid: boolean }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify?agent=${agentId}`, { token }));
    expect((await verify(first, a.agentId, a.token)).valid).toBe(true);
    expect((await verify(second, b.agentId, b.token)).valid).toBe(true);

    // A hand-made successor row on the first conversation's shard.
    const shard = await shardOf(first);
    const head = await shard
      .prepare("SELECT id, epoch_id, position, hash, covered_through_seq, body FROM boundaries WHERE conversation_id = ? ORDER BY position DESC LIMIT 1")
      .bind(first)
      .first<{ id: string; epoch_id: string; position: number; hash: string; covered_through_seq: number; body: string }>();
    if (head === null) throw new Error("no head");
    const forgedRun = `cmp_${crypto.randomUUID()}`;
    await shard.batch([
      shard
        .prepare(
          `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
           VALUES (?, ?, ?, ?, ?, 'packets/forged.json', ?, 1, 1, ?)`,
        )
        .bind(forgedRun, first, a.agentId, head.epoch_id, head.id, "0".repeat(64), new Date().toISOString()),
      shard
        .prepare(
          `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .bind(`bnd_forged_${forgedRun.slice(4)}`, first, a.agentId, head.epoch_id, head.position + 1, head.id, head.hash, head.covered_through_seq + 1, forgedRun, head.body, head.hash, new Date().toISOString()),
    ]);
    expect((await verify(first, a.agentId, a.token)).valid).toBe(false);
    expect((await verify(second, b.agentId, b.token)).valid).toBe(true);
    // The forged row is on that shard only: the other shards never saw the first conversation.
    for (const other of shardsOf(env).filter((s: Shard) => s.name !== "DB_SHARD_0")) {
      const row = await other.db.prepare("SELECT COUNT(*) AS n FROM boundaries WHERE conversation_id = ?").bind(first).first<{ n: number }>();
      expect(row?.n).toBe(0);
    }
  });

  it("answers every request about a conversation from the control database and its own shard, never another shard", async () => {
    const conversation = conversationOn("DB_SHARD_1");
    const { agentId, token } = await compacted(conversation, 1);
    const base = `/v1/conversations/${encodeURIComponent(conversation)}`;
    // The boundary's extraction keeps a page for the person who spoke, read below through the conversation.
    await waitFor(async () => {
      const row = await (await shardOf(conversation)).prepare("SELECT COUNT(*) AS n FROM extraction_runs WHERE conversation_id = ?").bind(conversation).first<{ n: number }>();
      return (row?.n ?? 0) >= 1 ? true : undefined;
    }, "an extraction run");
    const requests: { method: string; path: string; body?: unknown }[] = [
      { method: "POST", path: eventsPath(conversation), body: sourceEvent("late-1", "late-1", "one more about the offsite") },
      { method: "POST", path: eventsPath(conversation, "/batch"), body: { events: [sourceEvent("late-2", "late-2", "and another")] } },
      { method: "GET", path: eventsPath(conversation) },
      { method: "GET", path: `${base}/turns` },
      { method: "GET", path: `${base}/context?agent=${agentId}` },
      { method: "GET", path: `${base}/context?agent=${agentId}&query=Lisbon` },
      { method: "POST", path: `${base}/compose`, body: { agent: agentId, prompt: { text: "Which city is preferred?" } } },
      { method: "GET", path: `${base}/chain?agent=${agentId}` },
      { method: "GET", path: `${base}/verify?agent=${agentId}` },
      { method: "GET", path: `${base}/verify/links?agent=${agentId}` },
      { method: "GET", path: `${base}/incidents` },
      { method: "GET", path: `${base}/memory/search?agent=${agentId}&q=Lisbon` },
      { method: "GET", path: `${base}/memory/pages?agent=${agentId}` },
      { method: "GET", path: `${base}/memory/pages/extracted/people/u1?agent=${agentId}&provenance=1` },
    ];
    for (const request of requests) {
      const res = await call(request.method, request.path, { token, body: request.body, headers: { [D1_METER_HEADER]: "on" } });
      expect(res.status, `${request.method} ${request.path}: ${await res.clone().text()}`).toBeLessThan(300);
      const databases = /databases=([^;]*)/.exec(res.headers.get(D1_READS_HEADER) ?? "")?.[1]?.split(",").filter((d) => d !== "") ?? [];
      expect(databases.length, `${request.method} ${request.path}`).toBeGreaterThan(0);
      for (const database of databases) expect(["DB", "DB_SHARD_1"], `${request.method} ${request.path} read ${database}`).toContain(database);
    }
  });

  it("lists conversations for the inspector from the placements, asking each shard once for the page's newest events", async () => {
    const prefix = `api:list-${run}`;
    const ids = ["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_0", "DB_SHARD_2"].map((shard) => conversationOn(shard, prefix));
    const token = await tokenFor(`${prefix}:*`);
    for (const [i, id] of ids.entries()) {
      for (let n = 0; n <= i; n++) expect((await call("POST", eventsPath(id), { token, body: sourceEvent(`k${n}`, `${n}`, `hello ${n}`) })).status).toBe(201);
    }
    // A conversation placed but never written is not listed.
    await placeConversation(env, conversationOn("DB_SHARD_1", prefix));

    const asked: string[] = [];
    const counting = new Map([...shardMap(env)].map(([name, db]) => [name, new Proxy(db, { get: (target, key) => (key === "prepare" ? (sql: string) => (asked.push(name), target.prepare(sql)) : Reflect.get(target, key, target) as unknown) })]));
    const page = await listConversations(env.DB, counting, [`${prefix}:*`], "", 50);
    const expected = ids.map((id, i) => ({ id, lastSeq: i + 1 })).sort((x, y) => (x.id < y.id ? -1 : 1));
    expect(page.conversations.map((c) => ({ id: c.conversationId, lastSeq: c.lastSeq }))).toEqual(expected);
    expect(page.nextAfter).toBeNull();
    expect(asked.sort()).toEqual(["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2"]);

    // Paged: two at a time, in id order, every conversation exactly once.
    const seen: string[] = [];
    for (let after = ""; ; ) {
      const part = await listConversations(env.DB, shardMap(env), [`${prefix}:*`], after, 2);
      seen.push(...part.conversations.map((c) => c.conversationId));
      if (part.nextAfter === null) break;
      after = part.nextAfter;
    }
    expect(seen).toEqual(expected.map((e) => e.id));
  });
});
