import { env } from "cloudflare:workers";
import { afterEach, describe, expect, inject, it } from "vitest";
import { conversationStub } from "../../src/durable/stub";
import { waitFor } from "../support/chain";
import { pair, register } from "../support/declarations";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * Replies travel on a queue of their own: a compaction whose model call hangs holds its batch, and
 * on one queue every later batch behind it (a queue hands its consumer one batch after another),
 * so a chat's reply would wait for another chat's summary. Nothing here is timed: the compaction's
 * call is held at the fake model until the test releases it, and the reply in the other chat must
 * be recorded meanwhile. The profile "fakerq" is this file's own session on the fake model.
 */

const session = `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/reply-queue`;
const held = async (): Promise<string[]> => (await (await fetch(`${session}/__held`)).json()) as string[];

afterEach(async () => {
  await fetch(`${session}/__release`, { method: "POST", body: JSON.stringify({ hold: "compaction" }) });
  await fetch(`${session}/__reset`, { method: "POST" });
});

let counter = 0;

describe("replies do not wait behind compactions", () => {
  it("a reply in one chat is recorded while another chat's compaction hangs on its model call", { timeout: 90_000 }, async () => {
    expect((await fetch(`${session}/__script`, { method: "POST", body: JSON.stringify([{ hold: "compaction" }]) })).status).toBe(204);

    // Chat A: talked to until its chain plans a run, whose model call the fake holds.
    const compacting = freshConversation("api:rq");
    const compactor = `rq-${Date.now().toString(36)}-${counter++}`;
    const compactorToken = await tokenFor(compacting, `agent:${compactor}`);
    expect((await register(compactorToken, { agentId: compactor, sources: [compacting], trigger: 2_000, retain: 800, profile: "fakerq", outputMode: "plain" })).status).toBe(201);
    // Talked to until its chain plans a run (a plan opens at the trigger), then its job reaches the model.
    const planned = async () => (await conversationStub(env, compacting).describeChain(compacting, compactor))?.openRunId ?? null;
    for (let i = 0; (await planned()) === null; i++) {
      if (i === 60) throw new Error("no compaction was planned");
      const text = `Message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + i} euros and a venue with a garden.`;
      expect((await call("POST", eventsPath(compacting), { token: compactorToken, body: sourceEvent(`a${i}`, `a${i}`, text) })).status).toBe(201);
    }
    await waitFor(async () => ((await held()).length > 0 ? true : undefined), "the compaction's model call");

    // Chat B: a question to a replying agent, asked while A's compaction hangs.
    const asking = freshConversation("api:rq");
    const replier = `rq-${Date.now().toString(36)}-${counter++}`;
    const replierToken = await tokenFor(asking, `agent:${replier}`);
    const base = pair({ agentId: replier, sources: [asking], trigger: 50_000, retain: 20_000, profile: "fake" });
    expect((await call("PUT", `/v1/agents/${replier}`, { token: replierToken, body: { agent: { ...base.agent, reply: { mode: "builtin" } }, compactor: base.compactor } })).status).toBe(201);
    expect((await call("POST", eventsPath(asking), { token: replierToken, body: sourceEvent("q1", "q1", "Which venue did we pick?") })).status).toBe(201);

    const proposal = await waitFor(async () => {
      const page = await json<{ events: { kind: string }[] }>(await call("GET", `${eventsPath(asking)}?limit=50`, { token: replierToken }));
      return page.events.find((e) => e.kind === "proposal");
    }, `the reply in ${asking}`);
    expect(proposal.kind).toBe("proposal");
    // Recorded while A's model call was still held, its batch still running.
    expect(await held()).toEqual(["compaction"]);
  });
});
