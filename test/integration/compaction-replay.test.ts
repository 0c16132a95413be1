import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { compactorMessages } from "../../src/core/compactor-input";
import { packetSchema } from "../../src/core/packet";
import { reconstruct } from "../../src/core/reconstruction";
import { renderTurn } from "../../src/core/render";
import { conversationStub } from "../../src/durable/stub";
import { readChainBoundaries } from "../support/reads";
import { readAllEvents } from "../../src/storage/shard/events";
import { pair } from "../support/declarations";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, tokenFor } from "./helpers";

/** A deterministic pseudo-random stream, so the replay is the same conversation every run. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

const WORDS =
  "venue budget flights hotel schedule speaker agenda catering visa invoice deadline workshop keynote badge shuttle dinner lisbon porto berlin room projector wifi sponsor ticket refund".split(" ");

function sentence(random: () => number, minChars: number, maxChars: number): string {
  const target = minChars + Math.floor(random() * (maxChars - minChars));
  const words: string[] = [];
  let length = 0;
  while (length < target) {
    const word = WORDS[Math.floor(random() * WORDS.length)] ?? "plan";
    words.push(word);
    length += word.length + 1;
  }
  return `${words.join(" ")}.`;
}

it(
  "replays 400,000 characters into a verified chain with bounded compactor input (default policy)",
  async () => {
    const conversation = freshConversation();
    const agentId = `replay-${Date.now().toString(36)}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const declarations = pair({ agentId, sources: [conversation], trigger: 80_000, retain: 40_000 });
    // The defaults of the contract: 80,000 / 40,000, frozen-prefix bounds and summary size as shipped.
    const registration = { agent: declarations.agent, compactor: { ...declarations.compactor, policy: {} } };
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: registration })).status).toBe(201);

    const random = prng(400_000);
    const events: unknown[] = [];
    let chars = 0;
    for (let g = 0; chars < 400_000; g++) {
      const question = sentence(random, 150, 450);
      const answer = sentence(random, 80, 300);
      chars += `Ada: ${question}`.length + answer.length;
      events.push(
        { kind: "source", idempotencyKey: `s${g}`, body: { messageId: `m${g}`, author: { id: "ada", name: "Ada" }, text: question } },
        { kind: "proposal", idempotencyKey: `p${g}`, body: { proposalId: `p${g}`, agentId, replyToMessageId: `m${g}`, text: answer } },
        { kind: "delivery", idempotencyKey: `d${g}`, body: { status: "delivered", proposalId: `p${g}` } },
      );
    }
    for (let i = 0; i < events.length; i += 99) {
      const res = await call("POST", eventsPath(conversation, "/batch"), { token, body: { events: events.slice(i, i + 99) } });
      expect(res.status).toBe(201);
    }

    // Wait for the chain to catch up: nothing in flight and the active context back under the trigger.
    const stub = conversationStub(env, conversation);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const state = await stub.describeChain(conversation, agentId);
      if (state !== undefined && state.openRunId === null && state.activeChars < 80_000) break;
      if (Date.now() > deadline) throw new Error(`chain did not catch up: ${JSON.stringify(state)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    const boundaries = await readChainBoundaries(await shardOf(conversation), conversation, agentId);
    // How many depends on how far ingest outruns the queue (a run freezes at most maxFrozenChars,
    // 160,000): at least two for 400,000 characters with an 80,000 trigger.
    expect(boundaries.length).toBeGreaterThanOrEqual(2);
    const frozenIds: string[] = [];
    let compactorInputChars = 0;
    let previous: (typeof boundaries)[number] | undefined;
    for (const boundary of boundaries) {
      // Every boundary names its predecessor and that predecessor's hash; coverage strictly advances.
      if (previous === undefined) expect(boundary.body.previous).toBeNull();
      else {
        expect(boundary.body.previous).toEqual({ id: previous.body.id, hash: previous.hash, coveredThroughSeq: previous.coveredThroughSeq });
        expect(boundary.coveredThroughSeq).toBeGreaterThan(previous.coveredThroughSeq);
      }
      const object = await env.DOCUMENTS.get(boundary.body.packet.key);
      const packet = packetSchema.parse(JSON.parse((await object?.text()) ?? "null") as unknown);
      frozenIds.push(...packet.frozen.turns.map((t) => t.id));
      compactorInputChars += compactorMessages(packet).reduce((n, m) => n + m.content.length, 0);
      previous = boundary;
    }

    // Every frozen turn is covered exactly once, and the covered turns are exactly the conversation's
    // turns up to the last boundary's coverage.
    const turns = reconstruct(await readAllEvents(await shardOf(conversation), conversation), { admittedAgents: new Set([agentId]), includeSensitive: false });
    const covered = turns.filter((t) => t.group <= (previous?.coveredThroughSeq ?? 0)).map((t) => t.id);
    expect(new Set(frozenIds).size).toBe(frozenIds.length);
    expect(frozenIds).toEqual(covered);

    const conversationChars = turns.reduce((n, t) => n + renderTurn(t).content.length, 0);
    const ratio = compactorInputChars / conversationChars;
    console.log(`replay: ${conversationChars} conversation chars, ${boundaries.length} boundaries, compactor input ${compactorInputChars} chars, ratio ${ratio.toFixed(3)}`);
    expect(conversationChars).toBeGreaterThanOrEqual(400_000);
    expect(ratio).toBeLessThanOrEqual(1.15);
  },
  180_000,
);
