import { describe, expect, it } from "vitest";
import { D1_METER_HEADER, D1_READS_HEADER } from "../../bench/worker/d1-meter";
import { pair, register } from "../support/declarations";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * What one append costs D1, counted by the D1 meter over the Worker and the conversation's object:
 * a source below the trigger is decided from the chain's running totals before it is written and
 * its skipped run is written in the same batch, the declarations serving the conversation are held
 * by the object (revalidated by the declarations' revision inside that batch), and the token check
 * is held by the Worker's isolate for a short time. So no append costs more than 2 round trips.
 */

const AGENT_PREFIX = `trips-${Date.now().toString(36)}`;

interface Logged {
  seq: number;
  kind: string;
  idempotencyKey: string;
  body: { status?: string; detail?: { sourceSeq?: number; activeChars?: number; activeMessages?: number; triggerInputChars?: number; reason?: string } };
}

interface Cost {
  readonly roundTrips: number;
  readonly statements: number;
  readonly rowsWritten: number;
}

function parseCost(header: string | null): Cost {
  const parts = Object.fromEntries((header ?? "").split("; ").map((part) => part.split("=") as [string, string]));
  return { roundTrips: Number(parts["round-trips"]), statements: Number(parts["statements"]), rowsWritten: Number(parts["rows-written"]) };
}

async function conversationWithAgent(name: string, trigger = 60_000) {
  const conversation = freshConversation("api:trips");
  const agentId = `${AGENT_PREFIX}-${name}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], historyAgents: [agentId, "host"], trigger })).status).toBe(201);
  return { conversation, token, agentId };
}

async function append(token: string, conversation: string, event: object, expected = 201): Promise<Cost> {
  const res = await call("POST", eventsPath(conversation), { token, body: event, headers: { [D1_METER_HEADER]: "on" } });
  expect(res.status, await res.clone().text()).toBe(expected);
  return parseCost(res.headers.get(D1_READS_HEADER));
}

async function log(token: string, conversation: string): Promise<Logged[]> {
  const events: Logged[] = [];
  for (let after: number | null = 0; after !== null; ) {
    const page: { events: Logged[]; nextAfter: number | null } = await json(await call("GET", `${eventsPath(conversation)}?limit=500&after=${after}`, { token }));
    events.push(...page.events);
    after = page.nextAfter;
  }
  return events;
}

const proposal = (n: number) => ({ kind: "proposal", idempotencyKey: `p${n}`, body: { proposalId: `p${n}`, agentId: "host", replyToMessageId: `m${n}`, text: `Noted, item ${n}.` } });
const delivery = (n: number) => ({ kind: "delivery", idempotencyKey: `d${n}`, body: { status: "delivered", proposalId: `p${n}` } });
const edit = (n: number) => ({ kind: "correction", idempotencyKey: `c${n}`, body: { action: "edit", targetMessageId: `m${n}`, text: `Message ${n}, edited.` } });
const message = (n: number) => sourceEvent(`s${n}`, `m${n}`, `Message ${n}: the venue holds ${40 + n} people.`);

/** The skipped runs, by the sequence number of the source each one records. */
function skipsBySource(events: readonly Logged[]): Map<number, Logged["body"]["detail"]> {
  return new Map(events.filter((e) => e.kind === "run" && e.body.status === "skipped").map((e) => [e.body.detail?.sourceSeq ?? -1, e.body.detail]));
}

describe("D1 round trips per append", () => {
  it("costs at most 2 for a source below the trigger, and for a proposal, delivery or correction", async () => {
    const { conversation, token } = await conversationWithAgent("kinds");
    // Warm: the epoch activated, its chain held by the object, the token checked once.
    for (const event of [message(1), proposal(1), delivery(1)]) await append(token, conversation, event);

    const costs: Record<string, Cost[]> = { source: [], proposal: [], delivery: [], correction: [] };
    for (let n = 2; n <= 4; n++) {
      costs["source"]?.push(await append(token, conversation, message(n)));
      costs["proposal"]?.push(await append(token, conversation, proposal(n)));
      costs["delivery"]?.push(await append(token, conversation, delivery(n)));
      costs["correction"]?.push(await append(token, conversation, edit(n)));
    }
    for (const [kind, list] of Object.entries(costs)) {
      for (const cost of list) expect(cost.roundTrips, kind).toBeLessThanOrEqual(2);
    }
    // A source and its skipped run are one batch from the object; the token is held by the isolate.
    for (const cost of costs["source"] ?? []) {
      expect(cost.roundTrips).toBe(1);
      expect(cost.rowsWritten).toBeGreaterThanOrEqual(2);
    }

    // Every source below the trigger has its skipped run right after it, as before.
    const events = await log(token, conversation);
    const skips = skipsBySource(events);
    for (const source of events.filter((e) => e.kind === "source")) {
      expect(skips.get(source.seq)?.reason).toBe("below_trigger");
      expect(events.find((e) => e.seq === source.seq + 1)?.kind).toBe("run");
    }
  });

  it("writes the conversation's high-water mark once an append, however many compactors' skipped runs the source brings", async () => {
    // Each compactor serving the conversation adds its skipped run to every source: its row and its
    // key's entry, and nothing more (the high-water mark was written again for each run: 3 rows a
    // compactor, not 2).
    const sourceCost = async (compactors: number): Promise<number> => {
      const conversation = freshConversation("api:trips");
      const agents = Array.from({ length: compactors }, (_, i) => `${AGENT_PREFIX}-hw${compactors}-${i}`);
      const token = await tokenFor(conversation, ...agents.map((agentId) => `agent:${agentId}`));
      for (const agentId of agents) expect((await register(token, { agentId, sources: [conversation], historyAgents: [agentId, "host"], trigger: 60_000 })).status).toBe(201);
      for (let n = 1; n <= 2; n++) await append(token, conversation, message(n));
      const costs = [];
      for (let n = 3; n <= 5; n++) costs.push((await append(token, conversation, message(n))).rowsWritten);
      expect(new Set(costs).size, costs.join(", ")).toBe(1);
      const events = await log(token, conversation);
      expect(events.filter((e) => e.kind === "run" && e.body.status === "skipped")).toHaveLength(5 * compactors);
      return costs[0] ?? 0;
    };
    const one = await sourceCost(1);
    const three = await sourceCost(3);
    expect(three - one).toBe(2 * 2);
  });

  it("writes for a source below the trigger only what the log does not already say: 7 rows, none of them its turn's fold", async () => {
    // The source's row with its key's and its message id's index entries (3), its skipped run's row
    // and key entry (2), its row of terms (1), the conversation's high-water mark (1). Its turn (role,
    // message id, author, sensitivity) is read from its own row; `turns` holds only what events
    // about it add later (an edit, a deletion, a delivery), so a message nothing came back to writes
    // no fold row and no entry of the fold's sequence index.
    const { conversation, token } = await conversationWithAgent("fold");
    for (let n = 1; n <= 2; n++) await append(token, conversation, message(n));
    const costs = [];
    for (let n = 3; n <= 5; n++) costs.push((await append(token, conversation, message(n))).rowsWritten);
    expect(costs).toEqual([7, 7, 7]);
  });

  it("reads the declarations serving the conversation once for a batch: its preflight and its reply hand-off share them", async () => {
    const { conversation, token } = await conversationWithAgent("batch");
    await append(token, conversation, message(1));
    const events = Array.from({ length: 33 }, (_, i) => [message(10 + i), proposal(10 + i), delivery(10 + i)]).flat();
    const res = await call("POST", eventsPath(conversation, "/batch"), { token, body: { events }, headers: { [D1_METER_HEADER]: "on" } });
    expect(res.status, await res.clone().text()).toBe(201);
    // The keys read, the events written, the declarations' revision read once, the preflight's own
    // reads and its skipped runs written: 5. A hand-off that asked for the declarations again cost 6.
    expect(parseCost(res.headers.get(D1_READS_HEADER)).roundTrips).toBe(5);
  });

  it("keeps a replayed source a replay: nothing more is written, and the next source is judged as if it never happened", async () => {
    const replayed = await conversationWithAgent("replayed");
    const plain = await conversationWithAgent("plain");
    // More keys after the first message (200 sources, 200 skipped runs) than the object remembers
    // writing, and fewer messages than the agent's caps would compact, so its replay is
    // preflighted ahead like any new source before the write finds the key taken.
    const batches = [0, 1].map((b) => ({ events: Array.from({ length: 100 }, (_, i) => sourceEvent(`b${b}-${i}`, `mb${b}-${i}`, `Batch ${b}, line ${i}.`)) }));
    for (const { conversation, token } of [replayed, plain]) {
      await append(token, conversation, message(1));
      for (const batch of batches) expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: batch })).status).toBe(201);
      await append(token, conversation, message(2));
    }
    const before = await log(replayed.token, replayed.conversation);
    await append(replayed.token, replayed.conversation, message(1), 200);
    await append(replayed.token, replayed.conversation, message(2), 200);
    for (const key of ["s1", "s2"]) {
      const conflict = await call("POST", eventsPath(replayed.conversation), { token: replayed.token, body: sourceEvent(key, "m9", "another text") });
      expect(conflict.status).toBe(409);
    }
    expect(await log(replayed.token, replayed.conversation)).toEqual(before);

    for (const { conversation, token } of [replayed, plain]) await append(token, conversation, message(3));
    const [a, b] = await Promise.all([log(replayed.token, replayed.conversation), log(plain.token, plain.conversation)]);
    // Run keys name their compactor, which differs between the two; everything else is the same.
    const shape = (events: Logged[]) => events.map((e) => ({ seq: e.seq, kind: e.kind, key: e.kind === "run" ? "run" : e.idempotencyKey, detail: e.body.detail }));
    expect(shape(a)).toEqual(shape(b));
    expect(skipsBySource(a).get(a.find((e) => e.idempotencyKey === "s3")?.seq ?? -1)?.reason).toBe("below_trigger");
  });

  it("takes a declaration change into account from the next append on", async () => {
    const { conversation, token, agentId } = await conversationWithAgent("changed", 60_000);
    await append(token, conversation, message(1));
    await append(token, conversation, message(2));
    // A new revision with another trigger: a new epoch, which the next source activates and preflights.
    expect((await register(token, { agentId, sources: [conversation], historyAgents: [agentId, "host"], trigger: 50_000 })).status).toBe(201);
    await append(token, conversation, message(3));
    let skips = skipsBySource(await log(token, conversation));
    expect([...skips.values()].map((d) => d?.triggerInputChars)).toEqual([60_000, 60_000, 50_000]);

    // Back to the cheap path on the new epoch.
    expect((await append(token, conversation, message(4))).roundTrips).toBeLessThanOrEqual(2);

    // Disabled: the next source is preflighted by nobody.
    const disabled = { agentId, sources: [conversation], historyAgents: [agentId, "host"], trigger: 50_000 };
    const body = pair(disabled);
    const off = { agent: { ...body.agent, enabled: false }, compactor: { ...body.compactor, enabled: false } };
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: off })).status).toBe(201);
    await append(token, conversation, message(5));
    const events = await log(token, conversation);
    skips = skipsBySource(events);
    const fifth = events.find((e) => e.idempotencyKey === "s5");
    expect(fifth).toBeDefined();
    expect(skips.has(fifth?.seq ?? -1)).toBe(false);
    expect(events.at(-1)?.idempotencyKey).toBe("s5");
  });
});
