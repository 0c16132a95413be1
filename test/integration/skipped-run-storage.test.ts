import { describe, expect, it } from "vitest";
import type { ChainAudit } from "../../src/api/chain";
import { behindTheServicesBack, verify } from "../support/anchored-chain";
import { register } from "../support/declarations";
import { shardOf } from "../support/shards";
import { readPreflightSizes } from "../../src/storage/shard/context-sizes";
import { countRunsByStatus } from "../../src/storage/shard/events";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * Below the trigger, every source a compactor serves leaves a content-dark skipped run in the log:
 * about half of a conversation's events. The log stores such a run as the few values its body does
 * not derive (`core/stored-body`), reads it back as exactly the body that was hashed, and an edit of
 * the stored form behind the service's back is named by the audit like an edit of any event.
 */

interface LoggedEvent {
  seq: number;
  kind: string;
  idempotencyKey: string;
  body: Record<string, unknown>;
}

async function conversationWithCompactor() {
  const conversation = freshConversation();
  const agentId = `skipform-${crypto.randomUUID().slice(0, 8)}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], historyAgents: [agentId], trigger: 50_000, retain: 20_000 })).status).toBe(201);
  return { conversation, agentId, compactorId: `${agentId}.compactor`, token };
}

async function storedRuns(conversation: string): Promise<{ seq: number; key: string; body: string }[]> {
  const { results } = await (await shardOf(conversation))
    .prepare("SELECT seq, idempotency_key AS key, body FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND kind = 'run' ORDER BY seq")
    .bind(conversation)
    .all<{ seq: number; key: string; body: string }>();
  return results;
}

const altered = (audit: ChainAudit): readonly number[] => audit.log.altered;

describe("a skipped run in the log", () => {
  it("is stored as the values its body does not derive, on the single and the batch append path alike", async () => {
    const { conversation, compactorId, token } = await conversationWithCompactor();
    // The conversation's first append, a later single one, then a batch: each way a source reaches the log.
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("s1", "m1", "The venue is in Porto.") })).status).toBe(201);
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("s2", "m2", "It has a terrace.") })).status).toBe(201);
    const batch = [sourceEvent("s3", "m3", "It holds forty people."), sourceEvent("s4", "m4", "Flights are included.")];
    expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events: batch } })).status).toBe(201);

    const runs = await storedRuns(conversation);
    expect(runs).toHaveLength(4);
    // The object form is about 230 bytes and its key names the compactor again; the row's key names
    // the compactor by its integer key and the source by its number, its body holds the three sizes.
    // The compactor's first run on the shard is spelled whole, and gives it that key.
    expect(runs[0]?.key).toBe(`run:pf_${compactorId}_1:skipped`);
    expect(runs[0]?.body).toMatch(new RegExp(`^\\["${compactorId.replace(/\./g, "\\.")}",1,`));
    const events = (await json<{ events: LoggedEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=100`, { token }))).events;
    const sources = events.filter((e) => e.kind === "source").map((e) => e.seq);
    for (const [i, run] of runs.entries()) {
      if (i === 0) continue;
      expect(run.key).toMatch(new RegExp(`^[0-9]+ ${sources[i]}$`));
      expect(run.body).toMatch(/^\[[0-9]+,[0-9]+,50000\]$/);
    }

    // Read back through the API, each is the run the preflight wrote.
    expect(events.filter((e) => e.kind === "run")).toEqual(
      sources.map((sourceSeq, i) => ({
        conversationId: conversation,
        seq: runs[i]?.seq,
        kind: "run",
        idempotencyKey: `run:pf_${compactorId}_${sourceSeq}:skipped`,
        sensitive: false,
        hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        recordedAt: expect.any(String),
        body: {
          agentId: compactorId,
          role: "compactor",
          runId: `pf_${compactorId}_${sourceSeq}`,
          status: "skipped",
          detail: { sourceSeq, activeChars: expect.any(Number), activeMessages: i + 1, triggerInputChars: 50_000, reason: "below_trigger" },
        },
      })),
    );
  });

  it("hashes as the body it reads back as, and an edit of its stored form is named by the audit", async () => {
    const { conversation, agentId, token } = await conversationWithCompactor();
    for (let i = 1; i <= 3; i++) expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`s${i}`, `m${i}`, `Message ${i}.`) })).status).toBe(201);
    expect(altered(await verify(token, conversation, agentId))).toEqual([]);

    const [, second] = await storedRuns(conversation);
    if (second === undefined) throw new Error("no second run");
    const shard = await shardOf(conversation);
    // The trigger it was weighed against, 50,000, becomes 5,000.
    const edited = second.body.replace("50000", "5000");
    expect(edited).not.toBe(second.body);
    await behindTheServicesBack(shard, "log", [shard.prepare("UPDATE log SET body = ? WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND seq = ?").bind(edited, conversation, second.seq)]);
    expect(altered(await verify(token, conversation, agentId))).toEqual([second.seq]);
    // So is an edit of its key's short spelling: the third run made to name another source.
    const third = (await storedRuns(conversation))[2];
    if (third === undefined) throw new Error("no third run");
    const renamed = third.key.replace(/ [0-9]+$/, " 999");
    expect(renamed).not.toBe(third.key);
    await behindTheServicesBack(shard, "log", [shard.prepare("UPDATE log SET idempotency_key = ? WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND seq = ?").bind(renamed, conversation, third.seq)]);
    expect(altered(await verify(token, conversation, agentId))).toEqual([second.seq, third.seq]);
  });

  it("is read by the inspector's size chart and run counts in either form: the array, or whole as before it", async () => {
    const { conversation, compactorId, token } = await conversationWithCompactor();
    for (let i = 1; i <= 2; i++) expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`s${i}`, `m${i}`, `Message ${i}.`) })).status).toBe(201);
    const shard = await shardOf(conversation);
    // Two rows as a log written before the array form holds them, and one of another compactor in it.
    const whole = (sourceSeq: number, activeChars: number, status: string) =>
      JSON.stringify({ agentId: compactorId, detail: { activeChars, activeMessages: 3, reason: "below_trigger", sourceSeq, triggerInputChars: 50_000 }, role: "compactor", runId: `x${sourceSeq}`, status });
    const rows: [string, string][] = [
      [whole(3, 999, "skipped"), "old-skipped"],
      [JSON.stringify(["other.compactor", 3, 5, 1, 50_000, "below_trigger"]), "other"],
      [whole(3, 1_234, "planned"), "old-planned"],
    ];
    for (const [i, [body, key]] of rows.entries()) {
      await shard
        .prepare("INSERT INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES ((SELECT id FROM conversation_keys WHERE conversation_id = ?), ?, 'run', ?, 0, ?, unhex(?), 0)")
        .bind(conversation, 5 + i, key, body, "0".repeat(64))
        .run();
    }
    const sizes = await readPreflightSizes(shard, conversation, compactorId, 10);
    expect(sizes).toEqual([
      { seq: 1, activeChars: 15, triggerChars: 50_000, planned: false },
      { seq: 3, activeChars: 30, triggerChars: 50_000, planned: false },
      { seq: 3, activeChars: 999, triggerChars: 50_000, planned: false },
      { seq: 3, activeChars: 1_234, triggerChars: 50_000, planned: true },
    ]);
    expect(await readPreflightSizes(shard, conversation, compactorId, 2)).toEqual(sizes.slice(2));
    expect(Object.fromEntries((await countRunsByStatus(shard, conversation)).byStatus)).toEqual({ planned: 1, skipped: 4 });
  });
});
