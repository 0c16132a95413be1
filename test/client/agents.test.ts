import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { foldlineMessages } from "../../client/agents";
import { createClient } from "../../client/index";
import type { HostMirror } from "../../bench/worker/agents-host";
import { conversationStub } from "../../src/durable/stub";
import { settledChain, waitFor } from "../support/chain";
import { register } from "../support/declarations";
import { call, freshConversation, json, tokenFor } from "../integration/helpers";

/**
 * `foldline/agents` against the Agents SDK itself: the SDK's Sessions installed on a Durable Object
 * in this workerd (bench/worker/agents-host.ts), written through its own `appendMessage`,
 * `updateMessage`, `deleteMessages` and `clearMessages`, its change feed mirrored into the real
 * Worker over the RPC entrypoint. The log and the served context are read back through the API.
 */

async function setUp(options: { trigger?: number; retain?: number; admitSensitive?: boolean } = {}) {
  const conversation = freshConversation("api:agents");
  const agent = `ag-${crypto.randomUUID().slice(0, 8)}`;
  const token = await tokenFor(conversation, `agent:${agent}`);
  expect((await register(token, { agentId: agent, sources: [conversation], ...options })).status).toBe(201);
  const mirror: HostMirror = { token, conversation, agent, sensitiveMarker: "[private]" };
  const host = env.AGENT_SESSIONS.get(env.AGENT_SESSIONS.idFromName(conversation));
  await host.mirror(mirror);
  const client = createClient({ binding: exports.FoldlineRpc, token, fetcher: exports.default });
  return { conversation, agent, token, mirror, host, client };
}

type LogEvent = { seq: number; kind: string; sensitive: boolean; body: Record<string, unknown> };

/** The conversation's log, as the API lists it. */
async function logOf(token: string, conversation: string): Promise<LogEvent[]> {
  const events: LogEvent[] = [];
  for (let after = 0; ; ) {
    const page = await json<{ events: LogEvent[] }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/events?after=${after}&limit=500`, { token }));
    events.push(...page.events.filter((e) => e.kind !== "run"));
    if (page.events.length < 500) return events;
    after = page.events.at(-1)?.seq ?? after;
  }
}

const said = (log: readonly LogEvent[]) => log.map((e) => [e.kind, e.body["text"] ?? e.body["action"] ?? e.body["status"]]);

describe("foldline/agents", () => {
  it("records a session's user and assistant messages as sources and delivered proposals, each reply in its message's group", async () => {
    const { conversation, agent, token, host, client } = await setUp();
    expect(await host.append({ id: "u1", role: "user", text: "We meet in Lisbon on Friday." })).toBe(true);
    await host.append({ id: "a1", role: "assistant", text: "Noted: Lisbon, Friday." });
    await host.append({ id: "s1", role: "system", text: "A system note the session keeps for itself." });
    await host.append({ id: "u2", role: "user", text: "And the budget is twelve thousand euros." });
    const log = await logOf(token, conversation);
    expect(said(log)).toEqual([
      ["source", "We meet in Lisbon on Friday."],
      ["proposal", "Noted: Lisbon, Friday."],
      ["delivery", "delivered"],
      ["source", "And the budget is twelve thousand euros."],
    ]);
    expect(log[0]?.body).toMatchObject({ messageId: "ag-:u1", author: { id: "person-u1" } });
    expect(log[1]?.body).toEqual({ proposalId: "ag-:a1", agentId: agent, replyToMessageId: "ag-:u1", text: "Noted: Lisbon, Friday." });
    // The served history is the log's: both people's messages and the delivered reply, in order.
    const messages = await foldlineMessages({ client, conversation, agent });
    expect(messages.filter((m) => m.role !== "system")).toEqual([
      { role: "user", content: expect.stringContaining("We meet in Lisbon on Friday.") },
      { role: "assistant", content: "Noted: Lisbon, Friday." },
      { role: "user", content: expect.stringContaining("And the budget is twelve thousand euros.") },
    ]);
    expect(JSON.stringify(messages)).not.toContain("A system note");
    expect(await host.errors()).toEqual([]);
  });

  it("records an edit of a person's message as an edit correction, each edit once, and a deletion as a delete correction", async () => {
    const { conversation, agent, token, host, client } = await setUp();
    await host.append({ id: "u1", role: "user", text: "The offsite is in Porto." });
    await host.update({ id: "u1", role: "user", text: "The offsite is in Lisbon." });
    // An update that leaves the text alone records nothing; an edit back to the first text is an edit of its own.
    await host.update({ id: "u1", role: "user", text: "The offsite is in Lisbon." });
    await host.update({ id: "u1", role: "user", text: "The offsite is in Porto." });
    await host.append({ id: "u2", role: "user", text: "Ignore that last plan." });
    await host.remove(["u2"]);
    const log = await logOf(token, conversation);
    expect(said(log)).toEqual([
      ["source", "The offsite is in Porto."],
      ["correction", "The offsite is in Lisbon."],
      ["correction", "The offsite is in Porto."],
      ["source", "Ignore that last plan."],
      ["correction", "delete"],
    ]);
    const served = JSON.stringify(await foldlineMessages({ client, conversation, agent }));
    expect(served).toContain("The offsite is in Porto.");
    expect(served).not.toContain("Lisbon");
    expect(served).not.toContain("Ignore that last plan.");
    expect(await host.errors()).toEqual([]);
  });

  it("keeps the log when the session is cleared, and says so", async () => {
    const { conversation, token, host } = await setUp();
    await host.append({ id: "u1", role: "user", text: "Remember the budget." });
    await host.clear();
    expect(said(await logOf(token, conversation))).toEqual([["source", "Remember the budget."]]);
    expect(await host.errors()).toEqual(["unsupported"]);
  });

  it("marks what the bot calls sensitive, and an agent that does not admit it is never served it", async () => {
    const { conversation, agent, token, host, client } = await setUp();
    await host.append({ id: "u1", role: "user", text: "[private] my door code is 4711" });
    await host.append({ id: "u2", role: "user", text: "Lunch at noon." });
    expect((await logOf(token, conversation)).map((e) => e.sensitive)).toEqual([true, false]);
    const served = JSON.stringify(await foldlineMessages({ client, conversation, agent }));
    expect(served).toContain("Lunch at noon.");
    expect(served).not.toContain("4711");
  });

  it("catches up what was written while the mirror was stopped, once, edits included", async () => {
    const { conversation, token, host, mirror } = await setUp();
    await host.append({ id: "u1", role: "user", text: "First." });
    await host.unmirror();
    await host.append({ id: "a1", role: "assistant", text: "Reply to first." });
    await host.update({ id: "u1", role: "user", text: "First, edited." });
    await host.append({ id: "u2", role: "user", text: "Second." });
    expect(said(await logOf(token, conversation))).toEqual([["source", "First."]]);
    expect(await host.catchUp(mirror)).toBe(4);
    const log = await logOf(token, conversation);
    expect(said(log)).toEqual([
      ["source", "First."],
      ["correction", "First, edited."],
      ["proposal", "Reply to first."],
      ["delivery", "delivered"],
      ["source", "Second."],
    ]);
    expect(log[2]?.body["replyToMessageId"]).toBe("ag-:u1");
    // Again: nothing new.
    expect(await host.catchUp(mirror)).toBe(0);
    expect(await logOf(token, conversation)).toHaveLength(5);
  });

  it("catches up only the newest messages it is told to look back at, whatever the session's length", async () => {
    const { conversation, token, host, mirror } = await setUp();
    await host.unmirror();
    for (let i = 1; i <= 5; i++) await host.append({ id: `u${i}`, role: "user", text: `Message ${i}.` });
    expect(await host.catchUp(mirror, 2)).toBe(2);
    expect(said(await logOf(token, conversation))).toEqual([
      ["source", "Message 4."],
      ["source", "Message 5."],
    ]);
  });

  it("lets the session's write go on when Foldline does not answer, says so, and catches the write up later", async () => {
    const { conversation, agent, token, host, mirror, client } = await setUp();
    await host.mirror({ ...mirror, hung: { timeoutMs: 100 } });
    // The append resolves although the log never answers: the listener gave up on it.
    expect(await host.append({ id: "u1", role: "user", text: "Sent while Foldline hangs." })).toBe(true);
    expect(await host.errors()).toEqual(["network"]);
    expect(await logOf(token, conversation)).toEqual([]);
    // As an object starting again does: catch up, then mirror.
    expect(await host.catchUp(mirror)).toBe(1);
    await host.mirror(mirror);
    await host.append({ id: "a1", role: "assistant", text: "An answer to it." });
    const log = await logOf(token, conversation);
    expect(said(log)).toEqual([
      ["source", "Sent while Foldline hangs."],
      ["proposal", "An answer to it."],
      ["delivery", "delivered"],
    ]);
    // A mirror that had not seen the message recorded the answer as a plain reply, in that message's
    // group; catching up again meets it (with a reply-to it would have given) and leaves it.
    expect(log[1]?.body["replyToMessageId"]).toBeUndefined();
    expect(await host.catchUp(mirror)).toBe(0);
    expect((await foldlineMessages({ client, conversation, agent })).filter((m) => m.role !== "system")).toEqual([
      { role: "user", content: expect.stringContaining("Sent while Foldline hangs.") },
      { role: "assistant", content: "An answer to it." },
    ]);
    expect(await host.errors()).toEqual(["network"]);
  });

  it("over 300 messages, serves a bounded history once compaction runs, every message in the log, and the chain verifies", { timeout: 300_000 }, async () => {
    const trigger = 3_000;
    const { conversation, agent, token, host, client } = await setUp({ trigger, retain: 1_000, admitSensitive: true });
    const served: number[] = [];
    for (let i = 0; i < 150; i++) {
      await waitFor(async () => {
        const now = await conversationStub(env, conversation).describeChain(conversation, agent);
        return now === undefined || now.openRunId === null ? true : undefined;
      }, "no compaction in flight");
      await host.append({ id: `u${i}`, role: "user", text: `Message ${i}: should the offsite move from Lisbon to Porto, and what does that do to the budget?` });
      const messages = await foldlineMessages({ client, conversation, agent, query: `Message ${i}` });
      served.push(messages.reduce((n, m) => n + m.content.length, 0));
      await host.append({ id: `a${i}`, role: "assistant", text: `Answer ${i}: the offsite stays in Lisbon, the budget at twelve thousand euros.` });
    }
    const log = await logOf(token, conversation);
    expect(log.filter((e) => e.kind === "source")).toHaveLength(150);
    expect(log.filter((e) => e.kind === "proposal")).toHaveLength(150);
    const { chain } = await settledChain(conversation, agent, 1, 60_000);
    expect(chain.length).toBeGreaterThan(5);
    // Within the trigger, the memory budget (4,000 by default) and the turn that came since the last settlement.
    expect(Math.max(...served.slice(-50))).toBeLessThanOrEqual(trigger + 4_000 + 300);
    expect(served.at(-1)).toBeLessThan(150 * 200);
    const verdict = await json<{ valid: boolean }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify?agent=${agent}`, { token }));
    expect(verdict.valid).toBe(true);
    expect(await host.errors()).toEqual([]);
  });
});
