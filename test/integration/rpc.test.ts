import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/core/hash";
import { pair, register } from "../support/declarations";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, logRows, tokenFor } from "./helpers";

/**
 * The Workers RPC entrypoint, called the way a bound Worker calls it: through the Worker's own
 * loopback export (`exports.FoldlineRpc`, what a service binding with `entrypoint = "FoldlineRpc"`
 * reaches). Every answer is compared with what HTTP says for the same input, since the contract is
 * "the same validation and scoping as HTTP".
 */

const rpc = exports.FoldlineRpc;

/** `sourceEvent` with its kind as a literal, so it type-checks as the entrypoint's `IngestInput`. */
const source = (key: string, messageId: string, text: string) =>
  ({ kind: "source", idempotencyKey: key, body: { messageId, author: { id: "u1", name: "Ada" }, text } }) as const;

let counter = 0;
const freshAgent = (): string => `rpc-${Date.now().toString(36)}-${counter++}`;

async function setup() {
  const conversation = freshConversation("api:rpc");
  const agentId = freshAgent();
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
  return { conversation, agentId, token };
}

/** The HTTP error body's `error`, which an RPC failure must equal. */
async function httpError(res: Response): Promise<ErrorBody["error"]> {
  expect(res.status).toBeGreaterThanOrEqual(400);
  return (await json<ErrorBody>(res)).error;
}

describe("FoldlineRpc", () => {
  it("ingests one event and a batch, then serves the same context as HTTP", async () => {
    const { conversation, agentId, token } = await setup();

    const one = await rpc.ingest(token, conversation, source("m1", "1", "Book a table for two at 7?"));
    if (!one.ok) throw new Error(one.error.message);
    expect(one.value).toMatchObject({ duplicate: false, event: { seq: 1, kind: "source", idempotencyKey: "m1" } });
    expect("event" in one.value && one.value.event.hash).toBe((await logRows(conversation))[0]?.hash);

    // The compactor's preflight appends a content-dark run after each source, so the head moved on.
    const head = (await logRows(conversation)).length;
    const batch = await rpc.ingest(token, conversation, {
      events: [source("m2", "2", "And a window seat."), source("m3", "3", "Thanks!")],
      expectedSeq: head,
    });
    if (!batch.ok) throw new Error(batch.error.message);
    expect(batch.value).toMatchObject({ lastSeq: head + 2, results: [{ duplicate: false, event: { seq: head + 1 } }, { duplicate: false, event: { seq: head + 2 } }] });

    // A retry of the same key and payload is a replay, as over HTTP (200 there).
    const before = await logRows(conversation);
    const replay = await rpc.ingest(token, conversation, source("m1", "1", "Book a table for two at 7?"));
    expect(replay.ok && "duplicate" in replay.value && replay.value.duplicate).toBe(true);
    expect(await logRows(conversation)).toEqual(before);
    expect(before.filter((row) => row.kind === "source").map((row) => row.idempotency_key)).toEqual(["m1", "m2", "m3"]);

    const served = await rpc.context(token, conversation, agentId);
    if (!served.ok) throw new Error(served.error.message);
    expect(served.value.messages.map((m) => m.content)).toEqual(["Ada: Book a table for two at 7?", "Ada: And a window seat.", "Ada: Thanks!"]);
    const overHttp = await call("GET", `/v1/conversations/${conversation}/context?agent=${agentId}`, { token });
    expect(overHttp.status).toBe(200);
    expect(served.value).toEqual(await json(overHttp));
  });

  it("answers compose, chain, verify and verifyLinks exactly as HTTP does", async () => {
    const { conversation, agentId, token } = await setup();
    expect((await rpc.ingest(token, conversation, source("m1", "1", "Where is the offsite?"))).ok).toBe(true);

    const prompt = { agent: agentId, prompt: { text: "Answer Ada." } };
    const composed = await rpc.compose(token, conversation, prompt);
    const composedHttp = await call("POST", `/v1/conversations/${conversation}/compose`, { token, body: prompt });
    expect(composedHttp.status).toBe(200);
    if (!composed.ok) throw new Error(composed.error.message);
    expect(composed.value.request.messages.at(-1)).toEqual({ role: "user", content: "Answer Ada." });
    expect(composed.value).toEqual(await json(composedHttp));

    const chain = await rpc.chain(token, conversation, agentId);
    const chainHttp = await call("GET", `/v1/conversations/${conversation}/chain?agent=${agentId}`, { token });
    expect(chain).toEqual({ ok: true, value: await json(chainHttp) });
    expect(chain.ok && chain.value.agentId).toBe(agentId);

    const verified = await rpc.verify(token, conversation, agentId);
    const verifiedHttp = await call("GET", `/v1/conversations/${conversation}/verify?agent=${agentId}`, { token });
    expect(verifiedHttp.status).toBe(200);
    expect(verified).toEqual({ ok: true, value: await json(verifiedHttp) });
    const page = await rpc.verifyLinks(token, conversation, agentId, { limit: 5 });
    const pageHttp = await call("GET", `/v1/conversations/${conversation}/verify/links?agent=${agentId}&limit=5`, { token });
    expect(pageHttp.status).toBe(200);
    expect(page).toEqual({ ok: true, value: await json(pageHttp) });
    // The caller's options are validated like a query string.
    const badPage = await rpc.verifyLinks(token, conversation, agentId, { limit: 0 });
    expect(badPage).toEqual({ ok: false, error: await httpError(await call("GET", `/v1/conversations/${conversation}/verify/links?agent=${agentId}&limit=0`, { token })) });
    expect(badPage.ok ? "ok" : badPage.error.code).toBe("validation_failed");

    // An agent without a declaration is the same `not_found` on both.
    const missing = await rpc.chain(token, conversation, "nobody-here");
    expect(missing).toEqual({ ok: false, error: await httpError(await call("GET", `/v1/conversations/${conversation}/chain?agent=nobody-here`, { token })) });
  });

  it("refuses a missing, malformed, unknown or revoked token as unauthorized, writing nothing", async () => {
    const conversation = freshConversation("api:rpc");
    const revoked = await tokenFor(conversation);
    await env.DB.prepare("UPDATE api_tokens SET revoked_at = ? WHERE token_hash = ?").bind(new Date().toISOString(), sha256Hex(revoked)).run();
    const refused = await httpError(await call("POST", eventsPath(conversation), { token: "fl_not_a_real_token_at_all", body: source("k", "1", "hi") }));
    expect(refused.code).toBe("unauthorized");

    for (const token of ["", "short", "fl_not_a_real_token_at_all", "has spaces in it, so never a token", revoked, 42 as unknown as string]) {
      expect(await rpc.ingest(token, conversation, source("k", "1", "hi"))).toEqual({ ok: false, error: refused });
      expect((await rpc.incidents(token, conversation)).ok).toBe(false);
      const context = await rpc.context(token, conversation, "any-agent");
      expect(context.ok ? "served" : context.error.code).toBe("unauthorized");
    }
    expect(await logRows(conversation)).toHaveLength(0);
  });

  it("keeps a token to its own conversations: forbidden elsewhere, validation_failed for a malformed id", async () => {
    const mine = freshConversation("api:rpc-a");
    const theirs = freshConversation("api:rpc-b");
    const myToken = await tokenFor(mine);
    const theirToken = await tokenFor(theirs);
    expect((await rpc.ingest(theirToken, theirs, source("k", "1", "secret plans"))).ok).toBe(true);

    const forbidden = await httpError(await call("POST", eventsPath(theirs), { token: myToken, body: source("k2", "2", "injected") }));
    expect(forbidden.code).toBe("forbidden");
    expect(await rpc.ingest(myToken, theirs, source("k2", "2", "injected"))).toEqual({ ok: false, error: forbidden });
    expect(await rpc.ingest(myToken, theirs, { events: [source("k3", "3", "injected")] })).toEqual({ ok: false, error: forbidden });
    for (const read of [
      rpc.context(myToken, theirs, "any-agent"),
      rpc.compose(myToken, theirs, { agent: "any-agent", prompt: { text: "hi" } }),
      rpc.chain(myToken, theirs, "any-agent"),
      rpc.verify(myToken, theirs, "any-agent"),
      rpc.verifyLinks(myToken, theirs, "any-agent"),
      rpc.incidents(myToken, theirs),
    ]) {
      const answer = await read;
      expect(answer.ok ? "allowed" : answer.error.code).toBe("forbidden");
      expect(JSON.stringify(answer)).not.toContain("secret plans");
    }
    // A prefix of an exact scope is not a wildcard.
    expect(await rpc.ingest(myToken, `${mine}x`, source("k4", "4", "near miss"))).toEqual({ ok: false, error: forbidden });
    expect(await logRows(theirs)).toHaveLength(1);
    expect(await logRows(`${mine}x`)).toHaveLength(0);

    const malformed = await rpc.ingest(myToken, "not a conversation", source("k5", "5", "hi"));
    expect(malformed.ok ? "accepted" : malformed.error.code).toBe("validation_failed");
  });

  it("refuses a malformed event with validation_failed, as HTTP does, and writes nothing", async () => {
    const conversation = freshConversation("api:rpc");
    const token = await tokenFor(conversation);
    const cases: unknown[] = [
      { kind: "source", idempotencyKey: "k1", body: { messageId: "1", text: "no author" } },
      { kind: "gossip", idempotencyKey: "k2", body: {} },
      { ...source("k3", "3", "hi"), extra: true },
      { events: [source("k4", "4", "fine"), { kind: "source", idempotencyKey: "k5", body: {} }] },
      { events: [] },
      "just a string",
      null,
    ];
    for (const input of cases) {
      const answer = await rpc.ingest(token, conversation, input as Parameters<typeof rpc.ingest>[2]);
      const path = typeof input === "object" && input !== null && "events" in input ? eventsPath(conversation, "/batch") : eventsPath(conversation);
      const overHttp = await httpError(await call("POST", path, { token, body: input }));
      expect(overHttp.code).toBe("validation_failed");
      expect(answer).toEqual({ ok: false, error: overHttp });
    }
    // A missing argument is a missing body, not an exception.
    const missing = await rpc.ingest(token, conversation, undefined as unknown as Parameters<typeof rpc.ingest>[2]);
    expect(missing.ok ? "accepted" : missing.error.code).toBe("validation_failed");
    // Structured clone carries values JSON cannot; they are refused like a body that is not JSON.
    const cyclic: Record<string, unknown> = { ...source("k6", "6", "hi") };
    cyclic["self"] = cyclic;
    const notJson = await rpc.ingest(token, conversation, cyclic as Parameters<typeof rpc.ingest>[2]);
    expect(notJson.ok ? "accepted" : notJson.error.code).toBe("invalid_json");
    expect(await logRows(conversation)).toHaveLength(0);
  });

  it("reports a stale expectedSeq as sequence_conflict with currentSeq, like HTTP", async () => {
    const conversation = freshConversation("api:rpc");
    const token = await tokenFor(conversation);
    expect((await rpc.ingest(token, conversation, source("k1", "1", "first"))).ok).toBe(true);
    const stale = await rpc.ingest(token, conversation, { ...source("k2", "2", "second"), expectedSeq: 0 });
    const overHttp = await httpError(await call("POST", eventsPath(conversation), { token, body: { ...source("k3", "3", "third"), expectedSeq: 0 } }));
    expect(overHttp).toMatchObject({ code: "sequence_conflict", currentSeq: 1 });
    expect(stale).toEqual({ ok: false, error: overHttp });
    expect(await logRows(conversation)).toHaveLength(1);
  });

  it("refuses Foldline's reserved keys and compactor runs as forbidden, writing nothing", async () => {
    const conversation = freshConversation("api:rpc");
    const token = await tokenFor(conversation);
    const compactorRun = {
      kind: "run",
      idempotencyKey: "forged-run",
      body: { runId: "r1", agentId: "x.compactor", role: "compactor", status: "completed" },
    };
    for (const [input, path] of [
      [source("run:forged", "1", "hi"), eventsPath(conversation)],
      [source("tg:update:1", "1", "hi"), eventsPath(conversation)],
      [compactorRun, eventsPath(conversation)],
      [{ events: [source("fine", "1", "hi"), source("run:forged", "2", "hi")] }, eventsPath(conversation, "/batch")],
    ] as const) {
      const answer = await rpc.ingest(token, conversation, input as Parameters<typeof rpc.ingest>[2]);
      const overHttp = await httpError(await call("POST", path, { token, body: input }));
      expect(overHttp.code).toBe("forbidden");
      expect(answer).toEqual({ ok: false, error: overHttp });
    }
    expect(await logRows(conversation)).toHaveLength(0);
  });

  it("validates agent ids and compose requests with the HTTP schemas", async () => {
    const { conversation, agentId, token } = await setup();
    const badAgent = await rpc.context(token, conversation, "no spaces allowed");
    const badAgentHttp = await httpError(await call("GET", `/v1/conversations/${conversation}/context?agent=${encodeURIComponent("no spaces allowed")}`, { token }));
    expect(badAgentHttp.code).toBe("validation_failed");
    expect(badAgent).toEqual({ ok: false, error: badAgentHttp });

    const badPrompt = { agent: agentId, prompt: { text: "hi", images: [{ url: "http://insecure.example/cat.png" }] } };
    const composed = await rpc.compose(token, conversation, badPrompt as Parameters<typeof rpc.compose>[2]);
    const composedHttp = await httpError(await call("POST", `/v1/conversations/${conversation}/compose`, { token, body: badPrompt }));
    expect(composedHttp.code).toBe("validation_failed");
    expect(composed).toEqual({ ok: false, error: composedHttp });

    const badPage = await rpc.incidents(token, conversation, { limit: 0 });
    const badPageHttp = await httpError(await call("GET", `/v1/conversations/${conversation}/incidents?limit=0`, { token }));
    expect(badPage).toEqual({ ok: false, error: badPageHttp });
  });

  it("lists the same incidents over RPC as over HTTP, page by page", async () => {
    const { conversation, agentId, token } = await setup();
    for (let i = 0; i < 5; i++) {
      expect((await rpc.ingest(token, conversation, source(`m${i}`, `${i}`, `Message ${i} about the offsite budget and venue.`))).ok).toBe(true);
    }
    // A newest message larger than the tail target fails its plan closed: one plan_failure incident.
    expect((await rpc.ingest(token, conversation, source("huge", "huge", "x".repeat(2_500)))).ok).toBe(true);

    const all = await rpc.incidents(token, conversation);
    const allHttp = await call("GET", `/v1/conversations/${conversation}/incidents`, { token });
    expect(allHttp.status).toBe(200);
    expect(all).toEqual({ ok: true, value: await json(allHttp) });
    if (!all.ok) throw new Error(all.error.message);
    expect(all.value.incidents.map((i) => [i.agentId, i.kind, i.code])).toEqual([[agentId, "plan_failure", "tail_group_too_large"]]);

    const first = all.value.incidents[0]?.id ?? 0;
    const after = await rpc.incidents(token, conversation, { after: first, limit: 1 });
    const afterHttp = await call("GET", `/v1/conversations/${conversation}/incidents?after=${first}&limit=1`, { token });
    expect(after).toEqual({ ok: true, value: await json(afterHttp) });
    expect(after).toEqual({ ok: true, value: { incidents: [], nextAfter: null } });
  });

  it("registers an agent as PUT /v1/agents/{agent} does: created, re-declared, replayed, and refused with HTTP's codes", async () => {
    const conversation = freshConversation("api:rpc");
    const agentId = freshAgent();
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const declaration = pair({ agentId, sources: [conversation] });

    const created = await rpc.registerAgent(token, agentId, declaration);
    if (!created.ok) throw new Error(created.error.message);
    expect(created.value).toMatchObject({ created: true, agent: { agentId, revision: 1, registration: { agent: { id: agentId } } } });
    // A changed pair is a new revision (HTTP's 201); the same pair sent again stores nothing (HTTP's 200).
    const changed = pair({ agentId, sources: [conversation], trigger: 3_000 });
    expect(await rpc.registerAgent(token, agentId, changed)).toMatchObject({ ok: true, value: { created: true, agent: { revision: 2 } } });
    expect(await rpc.registerAgent(token, agentId, changed)).toMatchObject({ ok: true, value: { created: false, agent: { revision: 2 } } });
    // HTTP reads back the declaration RPC stored.
    const read = await call("GET", `/v1/agents/${agentId}`, { token });
    expect(await json<{ revision: number }>(read)).toMatchObject({ revision: 2 });

    // Every refusal is HTTP's own, for the same input.
    const otherAgent = freshAgent();
    const cases: { name: string; rpc: () => Promise<unknown>; http: () => Promise<Response> }[] = [
      { name: "no agent scope", rpc: () => rpc.registerAgent(token, otherAgent, pair({ agentId: otherAgent, sources: [conversation] })), http: () => register(token, { agentId: otherAgent, sources: [conversation] }) },
      { name: "sources beyond the token", rpc: () => rpc.registerAgent(token, agentId, pair({ agentId, sources: ["api:rpc:*"] })), http: () => register(token, { agentId, sources: ["api:rpc:*"] }) },
      { name: "a body that is not a pair", rpc: () => rpc.registerAgent(token, agentId, { agent: { id: agentId } } as never), http: () => call("PUT", `/v1/agents/${agentId}`, { token, body: { agent: { id: agentId } } }) },
      { name: "a malformed id", rpc: () => rpc.registerAgent(token, "bad id!", declaration), http: () => call("PUT", `/v1/agents/${encodeURIComponent("bad id!")}`, { token, body: declaration }) },
      { name: "an unknown token", rpc: () => rpc.registerAgent("fl_not_a_real_token_at_all", agentId, declaration), http: () => call("PUT", `/v1/agents/${agentId}`, { token: "fl_not_a_real_token_at_all", body: declaration }) },
    ];
    for (const refusal of cases) {
      const answered = (await refusal.rpc()) as { ok: boolean; error?: { code: string } };
      expect({ name: refusal.name, ok: answered.ok }).toEqual({ name: refusal.name, ok: false });
      expect({ name: refusal.name, code: answered.error?.code }).toEqual({ name: refusal.name, code: (await httpError(await refusal.http())).code });
    }
    // Nothing was written by a refusal: the declaration is still the second one.
    expect(await json<{ revision: number }>(await call("GET", `/v1/agents/${agentId}`, { token }))).toMatchObject({ revision: 2 });
  });
});
