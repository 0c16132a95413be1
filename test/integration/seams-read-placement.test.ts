import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { conversationStub } from "../../src/durable/stub";
import { chooseShard, openShards, placeConversation } from "../../src/storage/shards";
import { register } from "../support/declarations";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";
import { placementRows } from "./seams-faults";

/**
 * Reads never write: a conversation nobody wrote is read where it would be placed (and found
 * empty), and only its first write places it. A context, chain or verify read of a fresh id leaves
 * no placement row behind, and answers exactly as for a placed conversation with nothing in it.
 */

const run = Date.now().toString(36);
let agents = 0;

async function agentFor(conversation: string) {
  const agentId = `seams-read-${run}-${agents++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation] })).status).toBe(201);
  return { agentId, token };
}

/** The answers to the three reads, with what differs between conversations (their ids) taken out. */
async function reads(conversation: string, agentId: string, token: string) {
  const base = `/v1/conversations/${encodeURIComponent(conversation)}`;
  const answers: Record<string, { status: number; body: unknown }> = {};
  for (const route of ["context", "chain", "verify"]) {
    const res = await call("GET", `${base}/${route}?agent=${agentId}`, { token });
    answers[route] = { status: res.status, body: JSON.parse((await res.text()).replaceAll(conversation, "<conversation>")) as unknown };
  }
  return answers;
}

const recordedShard = (conversation: string) => runInDurableObject(conversationStub(env, conversation), (_instance, state) => state.storage.get<string>("shard"));

describe("a read of a conversation nobody wrote", () => {
  it("places nothing, answers as for an empty conversation, and the first append places it", async () => {
    const fresh = freshConversation("api:seams-read");
    const { agentId, token } = await agentFor(fresh);

    const answered = await reads(fresh, agentId, token);
    expect(answered["context"]?.status, JSON.stringify(answered)).toBe(200);
    expect(answered["chain"]?.status, JSON.stringify(answered)).toBe(200);
    expect(answered["verify"]?.status, JSON.stringify(answered)).toBe(200);
    expect(await placementRows(fresh)).toEqual([]);
    expect(await recordedShard(fresh)).toBeUndefined();

    // The same reads of a conversation that was placed and holds nothing answer the same.
    const empty = freshConversation("api:seams-read");
    const other = await agentFor(empty);
    await placeConversation(env, empty);
    // Each agent has its own id and epoch (its declaration's hash); everything else must match.
    const strip = (answers: Record<string, { status: number; body: unknown }>, id: string) =>
      JSON.parse(JSON.stringify(answers).replaceAll(id, "<agent>").replace(/[\w.-]+\/\d+:[0-9a-f]{64}/g, "<epoch>")) as unknown;
    expect(strip(answered, agentId)).toEqual(strip(await reads(empty, other.agentId, other.token), other.agentId));

    // The first write places it where reads looked, and it is read from there.
    const appended = await call("POST", eventsPath(fresh), { token, body: sourceEvent("k1", "1", "the first message") });
    expect(appended.status, await appended.clone().text()).toBe(201);
    const home = chooseShard(fresh, openShards(env)).name;
    expect(await placementRows(fresh)).toEqual([{ shard: home }]);
    expect(await recordedShard(fresh)).toBe(home);
    const context = await json<{ messages: { content: string }[] }>(await call("GET", `/v1/conversations/${encodeURIComponent(fresh)}/context?agent=${agentId}`, { token }));
    expect(JSON.stringify(context.messages)).toContain("the first message");
  });

  it("writes nothing for a context read alone, however often it is repeated", async () => {
    const fresh = freshConversation("api:seams-read");
    const { agentId, token } = await agentFor(fresh);
    for (let i = 0; i < 3; i++) {
      const res = await call("GET", `/v1/conversations/${encodeURIComponent(fresh)}/context?agent=${agentId}`, { token });
      expect(res.status, await res.clone().text()).toBe(200);
    }
    expect(await placementRows(fresh)).toEqual([]);
    expect(await recordedShard(fresh)).toBeUndefined();
  });
});
