import { exports } from "cloudflare:workers";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { FoldlineBinding, FoldlineClient, components } from "../../client/index";
import { createClient, FoldlineError } from "../../client/index";
import { freshConversation, logRows, tokenFor } from "../integration/helpers";
import { pair } from "../support/declarations";

/**
 * The client against the real Worker, both ways a bot reaches it: over a service binding to the
 * RPC entrypoint (`exports.FoldlineRpc`, what `entrypoint = "FoldlineRpc"` binds) and over HTTP
 * (the Worker's own fetch handler standing in for the network). The same calls must give the same
 * answers and the same typed errors either way.
 */

const ORIGIN = "https://foldline.test";

/** The real entrypoint has the shape the client declares for it (a compile-time check as much as a value). */
const rpc: FoldlineBinding = exports.FoldlineRpc;

/** HTTP to the Worker's own fetch handler: the routes, middleware and error mapping a deployed Worker runs. */
const overHttp: typeof fetch = (input, init) => exports.default.fetch(new Request(input, init));

function clients(token: string) {
  return {
    http: createClient({ baseUrl: ORIGIN, token, fetch: overHttp }),
    binding: createClient({ binding: rpc, token, fetcher: exports.default }),
    bareBinding: createClient({ binding: rpc, token }),
  };
}

const source = (key: string, messageId: string, text: string) =>
  ({ kind: "source", idempotencyKey: key, body: { messageId, author: { id: "ada", name: "Ada" }, text } }) as const;

let counter = 0;
const freshAgent = (): string => `client-${Date.now().toString(36)}-${counter++}`;

async function setup() {
  const conversation = freshConversation("api:client");
  const agentId = freshAgent();
  const token = await tokenFor(conversation, `agent:${agentId}`);
  const { http, binding, bareBinding } = clients(token);
  const registered = await http.registerAgent(agentId, pair({ agentId, sources: [conversation], admitSensitive: true }));
  expect(registered).toMatchObject({ agentId, revision: 1, warnings: [] });
  return { conversation, agentId, token, http, binding, bareBinding };
}

async function failure(promise: Promise<unknown>): Promise<FoldlineError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof FoldlineError)) throw new Error(`expected a FoldlineError, got ${String(error)}`);
  return error;
}

/** What a failure says, without its stack: the same over both transports. */
const said = (error: FoldlineError) => ({ code: error.code, status: error.status, message: error.message, details: error.details, retryAfterSeconds: error.retryAfterSeconds });

describe("createClient over a binding and over HTTP", () => {
  it("appends, serves context, composes and searches with the same answers either way", async () => {
    const { conversation, agentId, http, binding } = await setup();

    const first = await binding.append(conversation, source("m1", "1", "Book a table for two at 7, at the harbour place."));
    expect(first).toMatchObject({ duplicate: false, event: { seq: 1, kind: "source", idempotencyKey: "m1" } });
    // The same key and payload over the other transport is a replay of the same event, not a second one.
    expect(await http.append(conversation, source("m1", "1", "Book a table for two at 7, at the harbour place."))).toEqual({ ...first, duplicate: true });

    const head = (await logRows(conversation)).length;
    const batch = await binding.appendBatch(conversation, [source("m2", "2", "And a window seat."), source("m3", "3", "The ferry leaves at 6.")], { expectedSeq: head });
    expect(batch).toMatchObject({ lastSeq: head + 2, results: [{ duplicate: false }, { duplicate: false }] });
    expect((await logRows(conversation)).filter((row) => row.kind === "source").map((row) => row.idempotency_key)).toEqual(["m1", "m2", "m3"]);

    const context = await binding.context(conversation, { agent: agentId });
    expect(context.messages.map((m) => m.content)).toEqual(["Ada: Book a table for two at 7, at the harbour place.", "Ada: And a window seat.", "Ada: The ferry leaves at 6."]);
    expect(await http.context(conversation, { agent: agentId })).toEqual(context);
    expect(await http.context(conversation, { agent: agentId, query: "ferry" })).toEqual(await binding.context(conversation, { agent: agentId, query: "ferry" }));

    const request = { agent: agentId, prompt: { text: "When is the ferry?" } };
    const composed = await binding.compose(conversation, request);
    expect(composed.request.messages.at(-1)).toEqual({ role: "user", content: "When is the ferry?" });
    expect(await http.compose(conversation, request)).toEqual(composed);

    const found = await binding.searchMemory(conversation, { agent: agentId, q: "ferry", limit: 5 });
    expect(found.results.map((r) => r.content)).toContain("The ferry leaves at 6.");
    expect(await http.searchMemory(conversation, { agent: agentId, q: "ferry", limit: 5 })).toEqual(found);
  });

  it("throws the same typed error either way: code, status and details", async () => {
    const { conversation, agentId, http, binding } = await setup();
    await binding.append(conversation, source("m1", "1", "first"));

    const stale = { ...source("m2", "2", "second"), expectedSeq: 0 };
    const overBinding = await failure(binding.append(conversation, stale));
    expect(said(overBinding)).toMatchObject({ code: "sequence_conflict", status: 409, details: { currentSeq: (await logRows(conversation)).length } });
    expect(said(await failure(http.append(conversation, stale)))).toEqual(said(overBinding));

    const elsewhere = freshConversation("api:client-other");
    const forbidden = await failure(binding.context(elsewhere, { agent: agentId }));
    expect(forbidden).toMatchObject({ code: "forbidden", status: 403 });
    expect(said(await failure(http.context(elsewhere, { agent: agentId })))).toEqual(said(forbidden));

    const invalid = await failure(binding.compose(conversation, { agent: "no spaces allowed", prompt: { text: "hi" } }));
    expect(invalid).toMatchObject({ code: "validation_failed", status: 400 });
    expect(said(await failure(http.compose(conversation, { agent: "no spaces allowed", prompt: { text: "hi" } })))).toEqual(said(invalid));

    const stranger = clients("fl_not_a_real_token_at_all");
    for (const client of [stranger.binding, stranger.http]) {
      expect(await failure(client.append(conversation, source("m9", "9", "injected")))).toMatchObject({ code: "unauthorized", status: 401 });
    }
    expect((await logRows(conversation)).filter((row) => row.kind === "source")).toHaveLength(1);
  });

  it("registers over the binding alone, reaches the typed routes through its HTTP fetcher, and says `unsupported` for a route without one", async () => {
    const { conversation, agentId, token, binding, bareBinding } = await setup();

    // registerAgent is the RPC entrypoint's own method: no fetcher needed, and its refusals are HTTP's.
    const reDeclared = await bareBinding.registerAgent(agentId, pair({ agentId, sources: [conversation], admitSensitive: true, trigger: 3_000 }));
    expect(reDeclared).toMatchObject({ agentId, revision: 2 });
    const next = freshAgent();
    expect(await failure(bareBinding.registerAgent(next, pair({ agentId: next, sources: [conversation] })))).toMatchObject({ code: "forbidden", status: 403 });
    expect((await failure(bareBinding.request("get", "/v1/agents/{agent}", { path: { agent: agentId } }))).code).toBe("unsupported");

    const current = await binding.request("get", "/v1/agents/{agent}", { path: { agent: agentId } });
    expect(current).toMatchObject({ agentId, revision: 2 });
    // The same pair again is `unchanged` (200): a registration resent by a retry changes nothing.
    const again = await binding.registerAgent(agentId, pair({ agentId, sources: [conversation], admitSensitive: true, trigger: 3_000 }));
    expect(again).toMatchObject({ agentId, revision: 2 });

    await binding.append(conversation, source("m1", "1", "hello"));
    const turns = await createClient({ baseUrl: ORIGIN, token, fetch: overHttp }).request("get", "/v1/conversations/{conversation}/turns", { path: { conversation }, query: { limit: 10 } });
    expect(turns.turns.map((t) => t.text)).toEqual(["hello"]);
  });

  it("types every route of /openapi.json, and takes a binding however the bot's Env types it", () => {
    // `wrangler types` declares a service binding to a Worker it cannot see as a plain `Fetcher`.
    expectTypeOf(createClient).toBeCallableWith({ binding: {} as Fetcher, token: "t" });
    expectTypeOf(createClient).toBeCallableWith({ binding: rpc, token: "t", fetcher: {} as Fetcher });
    const client = {} as FoldlineClient;
    expectTypeOf(client.request<"get", "/v1/conversations/{conversation}/turns">).returns.resolves.toEqualTypeOf<components["schemas"]["TurnPage"]>();
    expectTypeOf(client.request<"delete", "/v1/agents/{agent}/memory/{path}">).returns.resolves.toEqualTypeOf<undefined>();
    expectTypeOf(client.request<"get", "/healthz">).returns.resolves.toEqualTypeOf<components["schemas"]["Health"]>();
    const never = async () => {
      // @ts-expect-error: no such route
      await client.request("get", "/v1/nowhere");
      // @ts-expect-error: the context route needs its `agent` query
      await client.request("get", "/v1/conversations/{conversation}/context", { path: { conversation: "api:c" } });
      // @ts-expect-error: a GET has no body
      await client.request("get", "/v1/agents/{agent}", { path: { agent: "a" }, body: {} });
      // @ts-expect-error: PUT of a memory page needs `content`
      await client.request("put", "/v1/agents/{agent}/memory/{path}", { path: { agent: "a", path: "p" }, body: {} });
      // @ts-expect-error: an event needs its idempotency key
      await client.append("api:c", { kind: "source", body: { messageId: "1", author: { id: "a", name: "A" }, text: "hi" } });
    };
    expect(never).toBeTypeOf("function");
  });
});
