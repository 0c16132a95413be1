import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { conversationStub } from "../../src/durable/stub";
import { readChainBoundaries } from "../support/reads";
import { shardOf } from "../support/shards";
import { pair } from "../support/declarations";
import { call, eventsPath, freshConversation, json, tokenFor } from "./helpers";

const TRIGGER = 80_000;
const WORDS = "venue budget flights hotel schedule speaker agenda catering visa invoice deadline workshop keynote badge shuttle dinner lisbon porto berlin".split(" ");

function text(seed: number, length: number): string {
  const words: string[] = [];
  for (let i = 0, n = 0; n < length; i++) {
    const word = WORDS[(seed * 31 + i * 7) % WORDS.length] ?? "plan";
    words.push(word);
    n += word.length + 1;
  }
  return `${words.join(" ")}.`;
}

interface Manifest {
  boundary: { envelopeChars: number } | null;
  amendment: { envelopeChars: number } | null;
  totals: { chars: number };
  omitted: { groups: number };
}

it(
  "never serves more than the trigger plus the envelopes on a 2,000,000-character conversation",
  async () => {
    const conversation = freshConversation();
    const agentId = `long-${Date.now().toString(36)}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const base = pair({ agentId, sources: [conversation], trigger: TRIGGER, retain: 40_000, admitSensitive: true });
    // The contract's defaults for the compactor; the agent's own bound is the trigger plus room for envelopes.
    const agent = { ...base.agent, context: { maxChars: TRIGGER + 20_000, maxMessages: 2_000, maxAmendmentChars: 16_000 } };
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: { agent, compactor: { ...base.compactor, policy: {} } } })).status).toBe(201);

    const stub = conversationStub(env, conversation);
    const sample = async (): Promise<Manifest> => {
      const res = await call("GET", `/v1/conversations/${conversation}/context?agent=${agentId}`, { token });
      expect(res.status).toBe(200);
      return (await json<{ manifest: Manifest }>(res)).manifest;
    };
    const idle = async (): Promise<void> => {
      for (const deadline = Date.now() + 60_000; ; ) {
        const state = await stub.describeChain(conversation, agentId);
        if (state?.openRunId === null && state.activeChars < TRIGGER) return;
        if (Date.now() > deadline) throw new Error(`no catch-up: ${JSON.stringify(state)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };

    let chars = 0;
    let largest = 0;
    let group = 0;
    for (let batch = 0; chars < 2_000_000; batch++) {
      const events: unknown[] = [];
      for (let i = 0; i < 33; i++, group++) {
        const question = text(group, 200 + (group % 7) * 60);
        const answer = text(group + 1, 120 + (group % 5) * 40);
        chars += `Ada: ${question}`.length + answer.length;
        events.push(
          { kind: "source", idempotencyKey: `s${group}`, body: { messageId: `m${group}`, author: { id: "ada", name: "Ada" }, text: question } },
          { kind: "proposal", idempotencyKey: `p${group}`, body: { proposalId: `p${group}`, agentId, replyToMessageId: `m${group}`, text: answer } },
          { kind: "delivery", idempotencyKey: `d${group}`, body: { status: "delivered", proposalId: `p${group}` } },
        );
      }
      expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } })).status).toBe(201);

      // Every response is bounded by the agent's policy, even while compaction catches up.
      const manifest = await sample();
      expect(manifest.totals.chars).toBeLessThanOrEqual(agent.context.maxChars);
      if (batch % 25 === 24) {
        // At rest the chain has caught up: the trigger plus the envelopes bound what is served.
        await idle();
        const rested = await sample();
        const envelopes = (rested.boundary?.envelopeChars ?? 0) + (rested.amendment?.envelopeChars ?? 0);
        expect(rested.totals.chars).toBeLessThanOrEqual(TRIGGER + envelopes);
        expect(rested.omitted.groups).toBe(0);
        largest = Math.max(largest, rested.totals.chars);
      }
    }
    await idle();
    const final = await sample();
    const envelopes = (final.boundary?.envelopeChars ?? 0) + (final.amendment?.envelopeChars ?? 0);
    expect(final.totals.chars).toBeLessThanOrEqual(TRIGGER + envelopes);
    const boundaries = await readChainBoundaries(await shardOf(conversation), conversation, agentId);
    console.log(`long conversation: ${chars} characters, ${boundaries.length} boundaries, largest context at rest ${largest}, final ${final.totals.chars}`);
    expect(chars).toBeGreaterThanOrEqual(2_000_000);
    expect(boundaries.length).toBeGreaterThan(10);
  },
  600_000,
);
