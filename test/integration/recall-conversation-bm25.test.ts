import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { placeConversation } from "../../src/storage/shards";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { register } from "../support/declarations";
import { call, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * Recall ranks a conversation's turns by how rare each query word is in that conversation, not on
 * its shard (issue 23, found 9: "bm25's statistics mix tenants"). The turn index is one FTS5 table
 * per shard, so its own bm25 let another tenant's chat, placed on the same shard, decide which of
 * this chat's turns is served first.
 */

interface SearchResult {
  type: string;
  sources: { messageId: string }[];
}

/** Writes `texts` as the conversation's sources, through the log's own insert (the index's triggers run). */
async function write(conversation: string, texts: readonly string[], prefix: string): Promise<void> {
  const { db } = await placeConversation(env, conversation);
  const events = texts.map((text, i) => {
    const input = eventInputSchema.parse(sourceEvent(`${prefix}-${i}`, `${prefix}-${i}`, text));
    return { input, hash: eventHash(conversation, input), seq: i + 1 };
  });
  await insertEvents(db, conversation, events, new Date().toISOString());
}

/** Another conversation placed on the same shard as `conversation`. */
async function neighbourOf(conversation: string): Promise<string> {
  const home = (await placeConversation(env, conversation)).name;
  for (;;) {
    const other = freshConversation("api:neighbour");
    if ((await placeConversation(env, other)).name === home) return other;
  }
}

async function searchOrder(token: string, conversation: string, agentId: string, q: string): Promise<string[]> {
  const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/memory/search?agent=${agentId}&q=${encodeURIComponent(q)}&limit=50`, { token });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await json<{ results: SearchResult[] }>(res)).results.flatMap((r) => (r.type === "turn" ? [r.sources[0]?.messageId ?? ""] : []));
}

describe("recall's turn ranking", () => {
  it("weighs a word by its rarity in the conversation: another chat on the same shard saying it often changes nothing", async () => {
    const conversation = freshConversation("api:recall-bm25");
    const agentId = `bm25-${crypto.randomUUID().slice(0, 8)}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 200_000, historyAgents: [agentId] })).status).toBe(201);
    // "pottery" is this chat's everyday word; "kiln" is said once. Turns that say neither keep
    // each statement out of the others' neighbourhood (a turn is also indexed by the words of the
    // two turns on each side of it).
    const quiet = ["ok", "sure", "right", "fine", "noted"];
    await write(
      conversation,
      [
        "pottery again tonight",
        ...quiet,
        "my pottery teacher is strict",
        ...quiet,
        "the pottery studio smells of clay",
        ...quiet,
        "pottery makes me calm",
        ...quiet,
        "booked the kiln slot",
        ...quiet,
      ],
      "m",
    );
    const kiln = "m-24";
    const alone = await searchOrder(token, conversation, agentId, "pottery kiln");
    // The rare word decides: the one turn that says "kiln" comes first.
    expect(alone[0]).toBe(kiln);

    // A tenant on the same shard for whom "kiln" is everyday talk and "pottery" is never said.
    const neighbour = await neighbourOf(conversation);
    await write(neighbour, Array.from({ length: 60 }, (_, i) => `kiln firing batch ${i} is done`), "n");

    expect(await searchOrder(token, conversation, agentId, "pottery kiln")).toEqual(alone);
  });
});
