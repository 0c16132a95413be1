import { describe, expect, it } from "vitest";
import type { PairOptions } from "../support/declarations";
import { pair } from "../support/declarations";
import { settledChain } from "../support/chain";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * What the agent is served against its own caps (`context.maxChars`, `context.maxMessages`): the
 * compactor is planned before a cap would bite, so the served window does not slide.
 */

interface Context {
  messages: { role: string; content: string }[];
  manifest: { boundary: { id: string } | null; withheld: string | null; omitted: { groups: number; chars: number }; totals: { chars: number; messages: number } };
}

let counter = 0;
async function setup(options: Partial<PairOptions>, caps: { maxChars?: number; maxMessages?: number }) {
  const conversation = freshConversation();
  const agentId = `caps-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  const base = pair({ agentId, sources: [conversation], admitSensitive: true, ...options });
  const body = { agent: { ...base.agent, context: { ...base.agent.context, ...caps } }, compactor: base.compactor };
  expect((await call("PUT", `/v1/agents/${agentId}`, { token, body })).status).toBe(201);
  return { conversation, agentId, token };
}

const line = (i: number): string => `Message ${i}: the offsite in ${i % 2 === 0 ? "Lisbon" : "Porto"}, budget ${1000 + i} euros, flights included.`;

async function say(token: string, conversation: string, from: number, to: number, text: (i: number) => string = line): Promise<void> {
  for (let i = from; i < to; i++) {
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, text(i)) })).status).toBe(201);
  }
}

async function context(token: string, conversation: string, agentId: string): Promise<Context> {
  const res = await call("GET", `/v1/conversations/${conversation}/context?agent=${agentId}`, { token });
  expect(res.status).toBe(200);
  return json<Context>(res);
}

describe("the agent's own caps", () => {
  it("plan a compaction before maxMessages would bite, far below the character trigger", async () => {
    // 60 messages of ~70 characters: 4,200 characters, far below the 50,000 trigger, but more than
    // the agent's 40 messages. The old trigger never planned, and the agent lost the oldest 20.
    const { conversation, agentId, token } = await setup({ trigger: 50_000, retain: 20_000 }, { maxMessages: 40 });
    await say(token, conversation, 0, 60);
    const { chain } = await settledChain(conversation, agentId, 1);
    expect(chain.length).toBeGreaterThanOrEqual(1);
    const served = await context(token, conversation, agentId);
    expect(served.manifest.boundary).not.toBeNull();
    expect(served.manifest.omitted.groups).toBe(0);
    expect(served.manifest.totals.messages).toBeLessThanOrEqual(40);
    expect(served.messages.at(-1)?.content).toBe(`Ada: ${line(59)}`);
  });

  it("plan a compaction before maxChars would bite", async () => {
    const { conversation, agentId, token } = await setup({ trigger: 50_000, retain: 20_000 }, { maxChars: 3_000 });
    await say(token, conversation, 0, 60);
    await settledChain(conversation, agentId, 1);
    const served = await context(token, conversation, agentId);
    expect(served.manifest.boundary).not.toBeNull();
    expect(served.manifest.omitted.groups).toBe(0);
    expect(served.manifest.totals.chars).toBeLessThanOrEqual(3_000);
  });
});
