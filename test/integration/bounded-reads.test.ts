import { describe, expect, it } from "vitest";
import { D1_METER_HEADER, D1_READS_HEADER, D1Meter, meteredD1 } from "../../bench/worker/d1-meter";
import { sha256Hex } from "../../src/core/hash";
import { readConversationFacts, readConversationFactSources } from "../../src/storage/shard/conversation-memory";
import type { MergedPage } from "../../src/storage/shard/extractions";
import { writeMergedVersions } from "../../src/storage/shard/extractions";
import { register } from "../support/declarations";
import { chainOf } from "../support/anchored-chain";
import { loggedMessages, placedShardOf, shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, sourceEvent, tokenFor } from "./helpers";

/**
 * What an operation reads is set by its own work, never by the history before it: each is measured
 * on a short and a long conversation, the same in every other way, by the D1 meter over the
 * Worker and the conversation's object.
 */

interface Reads {
  readonly statements: number;
  readonly rowsRead: number;
}

function parse(header: string | null): Reads {
  const parts = Object.fromEntries((header ?? "").split("; ").map((part) => part.split("=") as [string, string]));
  return { statements: Number(parts["statements"]), rowsRead: Number(parts["rows-read"]) };
}

/** A conversation of `messages` sources (~100 characters each), appended 100 to a batch. */
async function history(messages: number): Promise<{ conversation: string; token: string; agentId: string }> {
  const conversation = freshConversation("api:bounded");
  const agentId = `bounded-${crypto.randomUUID().slice(0, 8)}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  for (let i = 0; i < messages; i += 100) {
    const events = Array.from({ length: Math.min(100, messages - i) }, (_, k) => sourceEvent(`h-${i + k}`, `h${i + k}`, `Message ${i + k}: the team compares Lisbon and Porto for the offsite, again and again.`));
    expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } })).status).toBe(201);
  }
  return { conversation, token, agentId };
}

describe("reads bounded by their own work", () => {
  it("activates a new agent's epoch on a long conversation reading the newest groups that reach its trigger, not the whole log", { timeout: 120_000 }, async () => {
    const activation = async (messages: number) => {
      const { conversation, token, agentId } = await history(messages);
      expect((await register(token, { agentId, sources: [conversation], trigger: 3_000, retain: 1_000 })).status).toBe(201);
      const res = await call("POST", eventsPath(conversation), { token, body: sourceEvent("first", "first", "The first message this agent sees."), headers: { [D1_METER_HEADER]: "on" } });
      expect(res.status).toBe(201);
      const start = await (await shardOf(conversation)).prepare("SELECT start_seq FROM activations WHERE conversation_id = ? AND agent_id = ?").bind(conversation, agentId).first<{ start_seq: number }>();
      // The frontier keeps the newest whole groups reaching the trigger (about 30 messages of ~100 characters).
      expect(start?.start_seq).toBeGreaterThan(messages - 40);
      return parse(res.headers.get(D1_READS_HEADER));
    };
    const short = await activation(300);
    const long = await activation(3_000);
    expect(long.rowsRead, `${JSON.stringify(short)} at 300 messages, ${JSON.stringify(long)} at 3,000`).toBeLessThan(short.rowsRead * 1.3);
  });
});

describe("the whole-chain verify", () => {
  it("refuses a log too long to read whole, naming its size and the paged call, and still answers a short one", async () => {
    const conversation = freshConversation("api:bounded");
    const long = freshConversation("api:bounded");
    const agentId = `bounded-${crypto.randomUUID().slice(0, 8)}`;
    const token = await tokenFor(conversation, long, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation, long], trigger: 3_000, retain: 1_000 })).status).toBe(201);
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("one", "one", "A short conversation.") })).status).toBe(201);
    const verify = () => call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify?agent=${agentId}`, { token });
    expect((await verify()).status).toBe(200);
    // A conversation whose log's high-water mark is past the bound, as 20,001 events would leave it.
    const longToken = await tokenFor(long, `agent:${agentId}`);
    await (await placedShardOf(long)).prepare("INSERT INTO conversations (id, created_at, last_seq) VALUES (?, ?, 20001)").bind(long, new Date().toISOString()).run();
    const refused = await call("GET", `/v1/conversations/${encodeURIComponent(long)}/verify?agent=${agentId}`, { token: longToken });
    expect(refused.status).toBe(413);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error).toMatchObject({ code: "payload_too_large", events: 20_001, boundaries: 0, maxEvents: 20_000, maxBoundaries: 100, paged: "verifyLinks" });
    expect(body.error.message).toContain("/verify/links");
  });
});

describe("a page of the paged verify", () => {
  it("reads its own links' part of the log, not the whole log", { timeout: 180_000 }, async () => {
    const secondPage = async (messages: number) => {
      const { conversation, token, agentId } = await history(messages);
      expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, admitSensitive: true })).status).toBe(201);
      await chainOf(token, conversation, agentId, 3);
      const path = `/v1/conversations/${encodeURIComponent(conversation)}/verify/links?${new URLSearchParams({ agent: agentId, after: "1", limit: "1" })}`;
      const res = await call("GET", path, { token, headers: { [D1_METER_HEADER]: "on" } });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { valid: boolean }).valid).toBe(true);
      return parse(res.headers.get(D1_READS_HEADER));
    };
    // The page's links cover what one or two rounds of 30 messages froze (how much each froze follows
    // how fast the queue ran), whatever came before the agent: a few hundred rows with their slices
    // and what they need from before them, against the 3,000 messages before them (a page read every
    // sequence number of the log: 3,488 rows here, 788 after 300 messages).
    const short = await secondPage(300);
    const long = await secondPage(3_000);
    expect(long.rowsRead, `${JSON.stringify(short)} after 300 messages, ${JSON.stringify(long)} after 3,000`).toBeLessThan(1_000);
    expect(short.rowsRead).toBeLessThan(1_000);
  });
});

describe("the admitted history of an agent that does not admit sensitive content", () => {
  it("reads back a bounded stretch of the log however sparse the admitted turns, and says where its reading stopped", { timeout: 300_000 }, async () => {
    const served = async (messages: number) => {
      const conversation = freshConversation("api:bounded");
      const agentId = `bounded-${crypto.randomUUID().slice(0, 8)}`;
      const token = await tokenFor(conversation, `agent:${agentId}`);
      // The oldest message is the one admitted turn; everything after it is sensitive.
      expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("admitted", "admitted", "The one message anyone may read.") })).status).toBe(201);
      for (let i = 0; i < messages; i += 100) {
        const events = Array.from({ length: Math.min(100, messages - i) }, (_, k) => sourceEvent(`s-${i + k}`, `s${i + k}`, `Private ${i + k}: my card number is on the back of the envelope.`, { sensitive: true }));
        expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } })).status).toBe(201);
      }
      expect((await register(token, { agentId, sources: [conversation], trigger: 3_000, retain: 1_000, admitSensitive: false })).status).toBe(201);
      const activating = await call("POST", eventsPath(conversation), { token, body: sourceEvent("first", "first", "The first message this agent sees."), headers: { [D1_METER_HEADER]: "on" } });
      expect(activating.status).toBe(201);
      const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${agentId}`, { token, headers: { [D1_METER_HEADER]: "on" } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { messages: { content: string }[]; manifest: { unread?: { throughSeq: number } } };
      const activation = parse(activating.headers.get(D1_READS_HEADER));
      return { activation, reads: parse(res.headers.get(D1_READS_HEADER)), text: body.messages.map((m) => m.content).join("\n"), unread: body.manifest.unread };
    };
    const short = await served(300);
    // The whole log was read back: the one admitted turn is served, and nothing is unread.
    expect(short.text).toContain("The one message anyone may read.");
    expect(short.unread).toBeUndefined();
    const long = await served(8_000);
    const longer = await served(16_000);
    // The context call reads back at most 8 pages of 500 events (16 and 32 of them hold these
    // histories), and activation its frontier's longest range (4,096 events), not the history.
    const said = `${JSON.stringify(short.reads)} after 300 sensitive messages, ${JSON.stringify(long.reads)} after 8,000, ${JSON.stringify(longer.reads)} after 16,000`;
    expect(long.reads.statements, said).toBeLessThanOrEqual(short.reads.statements + 8);
    expect(longer.reads.statements, said).toBe(long.reads.statements);
    expect(longer.activation.rowsRead, `activation: ${JSON.stringify(long.activation)} after 8,000, ${JSON.stringify(longer.activation)} after 16,000`).toBeLessThan(long.activation.rowsRead * 1.2);
    expect(longer.unread?.throughSeq).toBeGreaterThan(long.unread?.throughSeq ?? Infinity);
    // The reading stopped short of the oldest message, and the manifest says where.
    expect(long.text).not.toContain("The one message anyone may read.");
    expect(long.unread?.throughSeq).toBeGreaterThan(1);
    expect(long.text).toContain("The first message this agent sees.");
  });
});

describe("recall over a long conversation", () => {
  it("reads a bounded number of each term's matches, however many turns hold it", { timeout: 300_000 }, async () => {
    const searched = async (messages: number) => {
      const conversation = freshConversation("api:bounded");
      const agentId = `bounded-${crypto.randomUUID().slice(0, 8)}`;
      const token = await tokenFor(conversation, `agent:${agentId}`);
      expect((await register(token, { agentId, sources: [conversation], trigger: 2_000_000, retain: 1_000_000, admitSensitive: true })).status).toBe(201);
      // Every message holds the query's words: each term is in every turn.
      for (let i = 0; i < messages; i += 100) {
        const events = Array.from({ length: Math.min(100, messages - i) }, (_, k) => sourceEvent(`r-${i + k}`, `r${i + k}`, `Message ${i + k}: the offsite hotel in Porto costs ${1_000 + i + k} euros.`));
        expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } })).status).toBe(201);
      }
      const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/memory/search?${new URLSearchParams({ agent: agentId, q: "offsite hotel Porto" })}`, {
        token,
        headers: { [D1_METER_HEADER]: "on" },
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { results: unknown[] };
      expect(body.results.length).toBeGreaterThan(0);
      return parse(res.headers.get(D1_READS_HEADER));
    };
    const long = await searched(3_000);
    const longer = await searched(6_000);
    expect(longer.rowsRead, `${JSON.stringify(long)} at 3,000 messages, ${JSON.stringify(longer)} at 6,000`).toBeLessThan(long.rowsRead * 1.2);
  });
});

describe("recall beside a long run of events that are no turn", () => {
  it("reads a bounded stretch of the log around each match, however many events lie between it and its neighbours", { timeout: 300_000 }, async () => {
    // A match's neighbours are found by walking the log; between two messages a writer may append
    // any number of events that are no turn (here deletions of messages never stored).
    const searched = async (between: number) => {
      const conversation = freshConversation("api:bounded");
      const agentId = `bounded-${crypto.randomUUID().slice(0, 8)}`;
      const token = await tokenFor(conversation, `agent:${agentId}`);
      expect((await register(token, { agentId, sources: [conversation], trigger: 2_000_000, retain: 1_000_000, admitSensitive: true })).status).toBe(201);
      const say = async (events: object[]) => expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } })).status).toBe(201);
      await say([sourceEvent("before", "before", "The kayak rental opens at nine.")]);
      for (let i = 0; i < between; i += 100) {
        await say(Array.from({ length: Math.min(100, between - i) }, (_, k) => ({ kind: "correction", idempotencyKey: `gone-${i + k}`, body: { action: "delete", targetMessageId: `never-${i + k}` } })));
      }
      await say([sourceEvent("match", "match", "Bring the lantern for the night walk."), sourceEvent("after", "after", "Dinner is at eight.")]);
      const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/memory/search?${new URLSearchParams({ agent: agentId, q: "lantern" })}`, {
        token,
        headers: { [D1_METER_HEADER]: "on" },
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { results: { content?: string }[] };
      expect(body.results.map((r) => r.content)).toContain("Bring the lantern for the night walk.");
      return parse(res.headers.get(D1_READS_HEADER));
    };
    const long = await searched(1_500);
    const longer = await searched(3_000);
    expect(longer.rowsRead, `${JSON.stringify(long)} with 1,500 events between, ${JSON.stringify(longer)} with 3,000`).toBeLessThan(long.rowsRead * 1.2);
  });
});

describe("recall when every term is rare but together they match many turns", () => {
  it("still finds the oldest turn that holds them all: each term's matches are read whole", { timeout: 300_000 }, async () => {
    const conversation = freshConversation("api:bounded");
    const agentId = `bounded-${crypto.randomUUID().slice(0, 8)}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000_000, retain: 1_000_000, admitSensitive: true })).status).toBe(201);
    // The oldest message holds both words; 1,200 newer ones one each (600 of either, fewer than a
    // term's scan of 1,000), so the query's own newest 1,000 matches leave the oldest out.
    const both = sourceEvent("both", "both", "The kayak and the lantern are both in the shed.");
    expect((await call("POST", eventsPath(conversation), { token, body: both })).status).toBe(201);
    for (let i = 0; i < 1_200; i += 100) {
      const events = Array.from({ length: 100 }, (_, k) => sourceEvent(`one-${i + k}`, `one${i + k}`, `Note ${i + k}: the ${(i + k) % 2 === 0 ? "kayak" : "lantern"} again.`));
      expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } })).status).toBe(201);
    }
    const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/memory/search?${new URLSearchParams({ agent: agentId, q: "kayak lantern" })}`, { token });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { results: { content: string }[] };
    expect(body.results[0]?.content).toBe("The kayak and the lantern are both in the shed.");
  });
});

/** A conversation whose agent has `pages` extracted pages, each written `versions` times, every version setting its four facts again from three messages each. */
async function pagesWithVersions(pages: number, versions: number) {
  const conversation = freshConversation("api:bounded");
  const agentId = `bounded-${crypto.randomUUID().slice(0, 8)}`;
  const shard = await placedShardOf(conversation);
  await shard.prepare("INSERT OR IGNORE INTO conversations (id, created_at) VALUES (?, ?)").bind(conversation, new Date(0).toISOString()).run();
  const paths = Array.from({ length: pages }, (_, i) => `extracted/people/p${i}`);
  const heads = new Map<string, MergedPage["head"]>();
  // The twelve messages a version's facts cite (three each), in the log.
  const cited = await loggedMessages(shard, conversation, Array.from({ length: 12 }, (_, i) => `cited-${i}`));
  for (let v = 1; v <= versions; v++) {
    const merged = paths.map((path, p) => {
      const content = `Person ${p}, version ${v}`;
      const provenance = [0, 1, 2, 3].flatMap((f) =>
        [0, 1, 2].map((m) => ({ factKey: `fact-${f}`, messageId: `m${p}-${v}-${f}-${m}`, seq: cited[f * 3 + m]?.seq ?? 0, eventHash: cited[f * 3 + m]?.hash ?? "", runId: `ext_${v}` })),
      );
      return { path, head: heads.get(path), content, provenance };
    });
    expect(await writeMergedVersions(shard, conversation, agentId, merged, new Date())).toEqual(new Set(paths));
    for (const page of merged) heads.set(page.path, { version: v, content: page.content, contentHash: sha256Hex(page.content) });
  }
  return { conversation, agentId, shard, paths };
}

describe("a fact's sources", () => {
  it("are read by the page's facts and their current sources, not by every version the page had", async () => {
    const reads = async (versions: number) => {
      const { conversation, agentId, shard, paths } = await pagesWithVersions(1, versions);
      const meter = new D1Meter();
      meter.arm();
      const sources = await readConversationFactSources(meteredD1(shard, meter), conversation, agentId, paths[0] ?? "", versions);
      expect(sources.map((s) => s.version)).toEqual(Array(12).fill(versions));
      return meter.take().rowsRead;
    };
    const few = await reads(2);
    const many = await reads(60);
    expect(many, `${few} rows read at 2 versions, ${many} at 60`).toBeLessThan(few * 1.5);
  });
});

describe("the inspector's page of facts", () => {
  it("reads the facts it lists and their current sources, not every version of every page", async () => {
    const reads = async (versions: number) => {
      const { conversation, agentId, shard } = await pagesWithVersions(3, versions);
      const meter = new D1Meter();
      meter.arm();
      // Five facts after the first page's second: its last two, then the next page's first three; two sources each, the oldest.
      const facts = await readConversationFacts(meteredD1(shard, meter), conversation, agentId, { path: "extracted/people/p0", factKey: "fact-1" }, 5, 2);
      const rowsRead = meter.take().rowsRead;
      expect(facts.map((f) => [f.path.slice(-2), f.factKey, f.messageId, f.version, f.pageVersion])).toEqual(
        [
          ["p0", 2],
          ["p0", 3],
          ["p1", 0],
          ["p1", 1],
          ["p1", 2],
        ].flatMap(([p, f]) => [0, 1].map((m) => [p, `fact-${f}`, `m${String(p).slice(1)}-${versions}-${f}-${m}`, versions, versions])),
      );
      return rowsRead;
    };
    const few = await reads(2);
    const many = await reads(40);
    // Listing five facts walked every source row of every version of their pages: 464 rows at 2
    // versions, 6,392 at 40; now 151 and 151.
    expect(many, `${few} rows read at 2 versions, ${many} at 40`).toBeLessThan(few * 1.5);
  });

  it("passes over the facts of a deleted page, listing the next live ones", async () => {
    const { conversation, agentId, shard } = await pagesWithVersions(3, 2);
    await shard
      .prepare(
        `INSERT INTO conversation_memory_versions (conversation_id, agent_id, path, version, content, content_hash, chars, deleted, created_at)
         VALUES (?1, ?2, 'extracted/people/p1', 3, '', ?3, 0, 1, ?4)`,
      )
      .bind(conversation, agentId, sha256Hex(""), new Date().toISOString())
      .run();
    const facts = await readConversationFacts(shard, conversation, agentId, { path: "extracted/people/p0", factKey: "fact-1" }, 5, 1);
    expect(facts.map((f) => `${f.path.slice(-2)}/${f.factKey}`)).toEqual(["p0/fact-2", "p0/fact-3", "p2/fact-0", "p2/fact-1", "p2/fact-2"]);
    // From the start, and past the last fact: nothing after it.
    expect((await readConversationFacts(shard, conversation, agentId, undefined, 2, 1)).map((f) => `${f.path.slice(-2)}/${f.factKey}`)).toEqual(["p0/fact-0", "p0/fact-1"]);
    expect(await readConversationFacts(shard, conversation, agentId, { path: "extracted/people/p2", factKey: "fact-3" }, 5, 1)).toEqual([]);
  });
});
