import { describe, expect, it } from "vitest";
import { register } from "../support/declarations";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * A batch append is preflighted source by source, each as of itself, exactly as if the same events
 * had been appended one at a time: the same active size, the same reason, and a plan at the same
 * source. The history mixes what moves a tail's size in different ways: plain groups, a reply to an
 * older message (it joins that message's group), an edit of a message still in the tail, a deletion,
 * and a sensitive message the agent does not admit (neither counted nor preflighted).
 */

interface LoggedEvent {
  seq: number;
  kind: string;
  body: { messageId?: string; status?: string; detail?: { sourceSeq?: number; triggerSeq?: number; activeChars?: number; activeMessages?: number; reason?: string } };
}

const AGENT_PREFIX = `batch-${Date.now().toString(36)}`;

function history(): object[] {
  const events: object[] = [];
  const text = (i: number) => `Message ${i}: the venue in ${i % 2 === 0 ? "Porto" : "Lisbon"} holds ${40 + i} people and costs ${900 + i * 25} euros a night.`;
  for (let i = 1; i <= 16; i++) {
    events.push(sourceEvent(`s${i}`, `m${i}`, text(i), i === 7 ? { sensitive: true } : {}));
    // Every message but the fifth is answered at once; the fifth is answered after the sixth.
    if (i !== 5) events.push(...reply(i, i));
    if (i === 6) events.push(...reply(5, 5));
    if (i === 8) events.push({ kind: "correction", idempotencyKey: "c-edit", body: { action: "edit", targetMessageId: "m3", text: "Message 3, edited: Porto after all." } });
    if (i === 9) events.push({ kind: "correction", idempotencyKey: "c-del", body: { action: "delete", targetMessageId: "m4" } });
  }
  return events;
}

/** A reply and its delivery (a reply is a turn once delivered). */
function reply(to: number, n: number): object[] {
  return [
    { kind: "proposal", idempotencyKey: `p${n}`, body: { proposalId: `p${n}`, agentId: "host", replyToMessageId: `m${to}`, text: `Noted, venue ${to} is on the list.` } },
    { kind: "delivery", idempotencyKey: `d${n}`, body: { status: "delivered", proposalId: `p${n}` } },
  ];
}

async function log(token: string, conversation: string): Promise<LoggedEvent[]> {
  return (await json<{ events: LoggedEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=500`, { token }))).events;
}

/** Each preflight's outcome keyed by its source's message id, in source order. */
function preflights(events: readonly LoggedEvent[]) {
  const messageOf = new Map(events.filter((e) => e.kind === "source").map((e) => [e.seq, e.body.messageId]));
  return events
    .filter((e) => e.kind === "run" && (e.body.status === "skipped" || e.body.status === "planned"))
    .map((e) => {
      const detail = e.body.detail ?? {};
      // A skipped run names its source; a planned one, the source that triggered it.
      return { message: messageOf.get(detail.sourceSeq ?? detail.triggerSeq ?? -1), status: e.body.status, reason: detail.reason, activeChars: detail.activeChars, activeMessages: detail.activeMessages };
    });
}

async function conversationWithAgent(name: string) {
  const conversation = freshConversation();
  const agentId = `${AGENT_PREFIX}-${name}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], historyAgents: [agentId, "host"], trigger: 1_300, retain: 650 })).status).toBe(201);
  return { conversation, token };
}

describe("preflight of a batch append", () => {
  // Opening the conversation with the batch activates the epoch on its first source (the frontier
  // is as of that source, so the rest of the batch belongs to the epoch); after one single append,
  // the batch meets a chain that is already active and held in the object.
  it.each([
    { name: "a batch that activates the epoch", opening: 0 },
    { name: "a batch on an active chain", opening: 1 },
  ])("judges every source of $name as if it had been appended alone", async ({ opening }) => {
    const events = history();
    const single = await conversationWithAgent(`single${opening}`);
    for (const event of events) expect((await call("POST", eventsPath(single.conversation), { token: single.token, body: event })).status).toBe(201);
    const batch = await conversationWithAgent(`batch${opening}`);
    for (const event of events.slice(0, opening)) expect((await call("POST", eventsPath(batch.conversation), { token: batch.token, body: event })).status).toBe(201);
    const rest = events.slice(opening);
    expect((await call("POST", eventsPath(batch.conversation, "/batch"), { token: batch.token, body: { events: rest } })).status).toBe(201);

    const one = preflights(await log(single.token, single.conversation));
    const many = preflights(await log(batch.token, batch.conversation));
    // The sensitive seventh message is not admitted: it gets no preflight in either.
    expect(many.map((p) => p.message)).not.toContain("m7");
    expect(many).toHaveLength(15);
    // The premise: the trigger is crossed inside the batch, with sources after it.
    const planned = many.findIndex((p) => p.status === "planned");
    expect(planned).toBeGreaterThan(opening);
    expect(planned).toBeLessThan(many.length - 1);
    // Up to the plan the outcomes are identical; after it, the single appends may race the run's
    // settlement, while the batch's later sources all see the run in flight.
    expect(many.slice(0, planned + 1)).toEqual(one.slice(0, planned + 1));
    expect(many.slice(planned + 1).map((p) => p.reason)).toEqual(many.slice(planned + 1).map(() => "compaction_in_flight"));
    // Every admitted turn before the plan counts: the first source's size is its own line.
    expect(many[0]?.activeChars).toBeGreaterThan(0);
    expect(many[0]?.activeMessages).toBe(1);
  });
});
