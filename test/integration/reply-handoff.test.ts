import { describe, expect, it } from "vitest";
import { pair } from "../support/declarations";
import { waitFor } from "../support/chain";
import { mapDatabases } from "../../bench/worker/databases";
import { changeObjectEnv, failFirst, faultyD1, mentions } from "./seams-faults";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * What an append promises its replying agents: one reply job per admitted new source per agent,
 * handed to the queue after the write and kept by the conversation's object until the queue took
 * it (`durable/reply-handoff`). A hand-off larger than one `sendBatch` (100 messages), or one whose
 * send throws, still ends in every reply, once.
 */

interface LogEvent {
  kind: string;
  body: { agentId?: string; replyToMessageId?: string };
}

/** Two agents replying through the echo bot (a service binding), both serving `conversation`. */
async function twoReplyingAgents(conversation: string): Promise<{ token: string; agents: string[] }> {
  const agents = [`hand-a-${crypto.randomUUID().slice(0, 6)}`, `hand-b-${crypto.randomUUID().slice(0, 6)}`];
  const token = await tokenFor(conversation, ...agents.map((a) => `agent:${a}`));
  for (const agentId of agents) {
    const base = pair({ agentId, sources: [conversation], trigger: 2_000_000, retain: 1_000_000 });
    const registered = await call("PUT", `/v1/agents/${agentId}`, { token, body: { agent: { ...base.agent, reply: { mode: "service", binding: "ECHO_BOT" } }, compactor: base.compactor } });
    expect(registered.status, await registered.clone().text()).toBeLessThan(300);
  }
  return { token, agents };
}

const sources = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => sourceEvent(`${prefix}-${i}`, `${prefix}${i}`, `message ${i} of the batch`));

/** Each agent's replies: how many proposals answer each source message. */
async function repliesByAgent(token: string, conversation: string, agents: readonly string[]): Promise<Map<string, Map<string, number>>> {
  const events: LogEvent[] = [];
  for (let after = 0; ; ) {
    const page = await json<{ events: (LogEvent & { seq: number })[] }>(await call("GET", `${eventsPath(conversation)}?limit=500&after=${after}`, { token }));
    events.push(...page.events);
    if (page.events.length < 500) break;
    after = page.events.at(-1)?.seq ?? after;
  }
  const byAgent = new Map(agents.map((a) => [a, new Map<string, number>()]));
  for (const e of events) {
    if (e.kind !== "proposal" || e.body.agentId === undefined || e.body.replyToMessageId === undefined) continue;
    const replies = byAgent.get(e.body.agentId);
    replies?.set(e.body.replyToMessageId, (replies.get(e.body.replyToMessageId) ?? 0) + 1);
  }
  return byAgent;
}

async function everyReplyOnce(token: string, conversation: string, agents: readonly string[], messageIds: readonly string[]): Promise<void> {
  const replies = await waitFor(
    async () => {
      const found = await repliesByAgent(token, conversation, agents);
      return [...found.values()].every((m) => m.size === messageIds.length) ? found : undefined;
    },
    `${agents.length} × ${messageIds.length} replies`,
    90_000,
  );
  for (const agent of agents) expect(Object.fromEntries(replies.get(agent) ?? []), agent).toEqual(Object.fromEntries(messageIds.map((m) => [m, 1])));
}

describe("the reply hand-off", () => {
  it("hands off 51 sources to two replying agents in one batch append: 102 jobs, more than one sendBatch takes, every reply once", { timeout: 120_000 }, async () => {
    const conversation = freshConversation("api:handoff");
    const { token, agents } = await twoReplyingAgents(conversation);
    const batch = sources(51, "b");
    const appended = await call("POST", eventsPath(conversation, "/batch"), { token, body: { events: batch } });
    expect(appended.status, await appended.clone().text()).toBe(201);
    await everyReplyOnce(token, conversation, agents, batch.map((e) => e.body.messageId));
  });

  it("keeps what it owes when the send throws after the write, and hands it off again: every reply once", { timeout: 120_000 }, async () => {
    const conversation = freshConversation("api:handoff");
    const { token, agents } = await twoReplyingAgents(conversation);
    let failed = 0;
    const restore = await changeObjectEnv(conversation, (objectEnv) => ({
      ...objectEnv,
      REPLY_QUEUE: {
        send: (...args: Parameters<Queue["send"]>) => objectEnv.REPLY_QUEUE.send(...args),
        sendBatch: async (...args: Parameters<Queue["sendBatch"]>) => {
          // The first hand-off is taken by the queue, and its answer lost; the second is refused.
          failed += 1;
          if (failed === 1) await objectEnv.REPLY_QUEUE.sendBatch(...args);
          if (failed <= 2) throw new Error("Queue send failed: Network connection lost.");
          return objectEnv.REPLY_QUEUE.sendBatch(...args);
        },
      } as Queue,
    }));
    try {
      const first = sources(3, "f");
      expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events: first } })).status).toBe(201);
      const second = sourceEvent("s-0", "s0", "one more message");
      expect((await call("POST", eventsPath(conversation), { token, body: second })).status).toBe(201);
      await everyReplyOnce(token, conversation, agents, [...first.map((e) => e.body.messageId), second.body.messageId]);
      expect(failed).toBeGreaterThanOrEqual(3);
    } finally {
      await restore();
    }
  });

  it("hands off a write whose answer was lost: every reply once, and a retry that replays it adds none", { timeout: 120_000 }, async () => {
    const conversation = freshConversation("api:handoff");
    const { token, agents } = await twoReplyingAgents(conversation);
    // The second write of an event commits and its answer is lost; the first message warms the
    // object (its declarations and chains held), so the second takes the one-round-trip path.
    let inserts = 0;
    const lost = failFirst((c) => c.method === "batch" && mentions(c, "INSERT INTO log") && ++inserts === 2, { when: "after" });
    const restore = await changeObjectEnv(conversation, (objectEnv) => mapDatabases(objectEnv, (db, name) => (name === "DB" ? db : faultyD1(db, lost))));
    try {
      const warm = sourceEvent("w-0", "w0", "first message");
      expect((await call("POST", eventsPath(conversation), { token, body: warm })).status).toBe(201);
      const message = sourceEvent("l-0", "l0", "a message whose write's answer is lost");
      // Answered as the write was kept (the service reads the log again), or 503 for the client to retry.
      const answered = await call("POST", eventsPath(conversation), { token, body: message });
      expect(lost.fired).toBe(1);
      expect([201, 503], await answered.clone().text()).toContain(answered.status);
      const retried = await call("POST", eventsPath(conversation), { token, body: message });
      expect(retried.status, await retried.clone().text()).toBeLessThan(300);
      await everyReplyOnce(token, conversation, agents, ["w0", "l0"]);
    } finally {
      await restore();
    }
  });
});
