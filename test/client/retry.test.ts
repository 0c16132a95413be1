import { describe, expect, it } from "vitest";
import type { FoldlineBinding } from "../../client/index";
import { createClient, FoldlineError } from "../../client/index";
import { parseRetryAfter } from "../../client/errors";
import { retryDelaySeconds } from "../../client/retry";

/**
 * The client's errors and retries against scripted answers: what each answer becomes, which are
 * retried, how long each wait is, and that nothing waits on the wall clock (the sleep is a
 * recorder). The transports against the real Worker are binding.test.ts's.
 */

interface Sent {
  readonly url: string;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: string | undefined;
}

/** A `fetch` that answers from a script, one answer per call, and records each request. */
function scripted(...answers: (Response | Error)[]) {
  const sent: Sent[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    sent.push({ url: String(input), method: init?.method ?? "GET", headers: { ...(init?.headers as Record<string, string>) }, body: init?.body as string | undefined });
    const next = answers.shift();
    if (next === undefined) throw new Error("the script ran out of answers");
    if (next instanceof Error) throw next;
    return next;
  };
  return { fetch: fetch as typeof globalThis.fetch, sent };
}

const problem = (status: number, error: Record<string, unknown>, headers: Record<string, string> = {}) =>
  Response.json({ error }, { status, headers });

const APPENDED = { duplicate: false, event: { seq: 1 } };
const EVENT = { kind: "source", idempotencyKey: "msg-1", body: { messageId: "1", author: { id: "ada", name: "Ada" }, text: "hi" } } as const;

function client(fetch: typeof globalThis.fetch, retry: { attempts?: number; maxWaitSeconds?: number } = {}) {
  const waits: number[] = [];
  const foldline = createClient({ baseUrl: "https://foldline.test/", token: "fl_test", fetch, retry: { ...retry, sleep: async (ms) => void waits.push(ms) } });
  return { foldline, waits };
}

async function failure(promise: Promise<unknown>): Promise<FoldlineError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof FoldlineError)) throw new Error(`expected a FoldlineError, got ${String(error)}`);
  return error;
}

describe("the HTTP transport", () => {
  it("sends the bearer token, the documented path and the body, and answers the body", async () => {
    const { fetch, sent } = scripted(Response.json(APPENDED, { status: 201 }));
    const { foldline } = client(fetch);
    expect(await foldline.append("api:demo:chat 1", EVENT)).toEqual(APPENDED);
    expect(sent).toEqual([
      {
        url: "https://foldline.test/v1/conversations/api%3Ademo%3Achat%201/events",
        method: "POST",
        headers: { authorization: "Bearer fl_test", accept: "application/json", "content-type": "application/json" },
        body: JSON.stringify(EVENT),
      },
    ]);
  });

  it("puts options in the query, leaving out what is not given", async () => {
    const { fetch, sent } = scripted(Response.json({ results: [] }), Response.json({ messages: [] }));
    const { foldline } = client(fetch);
    await foldline.searchMemory("api:c", { agent: "helper", q: "ferry times" });
    await foldline.context("api:c", { agent: "helper", query: "a & b" });
    expect(sent.map((s) => s.url)).toEqual([
      "https://foldline.test/v1/conversations/api%3Ac/memory/search?agent=helper&q=ferry+times",
      "https://foldline.test/v1/conversations/api%3Ac/context?agent=helper&query=a+%26+b",
    ]);
  });

  it("encodes a memory page's path segment by segment, every other parameter whole", async () => {
    const { fetch, sent } = scripted(new Response(null, { status: 204 }), Response.json({ path: "a/b c", version: 1, contentHash: "0".repeat(64), created: true }, { status: 201 }));
    const { foldline } = client(fetch);
    expect(await foldline.request("delete", "/v1/agents/{agent}/memory/{path}", { path: { agent: "helper", path: "decisions/venue 2" } })).toBeUndefined();
    await foldline.request("put", "/v1/agents/{agent}/memory/{path}", { path: { agent: "a/b", path: "x" }, body: { content: "Lisbon" } });
    expect(sent.map((s) => s.url)).toEqual(["https://foldline.test/v1/agents/helper/memory/decisions/venue%202", "https://foldline.test/v1/agents/a%2Fb/memory/x"]);
  });

  it("turns a problem body into a FoldlineError with its code, status and details", async () => {
    const { fetch } = scripted(problem(409, { code: "sequence_conflict", message: "stale", currentSeq: 7 }));
    const error = await failure(client(fetch).foldline.append("api:c", { ...EVENT, expectedSeq: 3 }));
    expect(error).toMatchObject({ name: "FoldlineError", code: "sequence_conflict", status: 409, message: "stale", details: { currentSeq: 7 }, retryAfterSeconds: undefined });
  });

  it("names what is not a problem body by its status, and a missing answer `network`", async () => {
    const { fetch } = scripted(new Response("<html>bad gateway</html>", { status: 502 }), new TypeError("fetch failed"));
    const { foldline, waits } = client(fetch);
    expect(await failure(foldline.append("api:c", EVENT))).toMatchObject({ code: "unexpected_response", status: 502 });
    expect(await failure(foldline.append("api:c", EVENT))).toMatchObject({ code: "network", status: undefined });
    // Neither is retried: only 429 and 503 say "later".
    expect(waits).toEqual([]);
  });
});

describe("retries", () => {
  it("resends after a 503 as long as its Retry-After says, with the same idempotency key", async () => {
    const { fetch, sent } = scripted(problem(503, { code: "unavailable", message: "busy", retryAfterSeconds: 2 }, { "Retry-After": "2" }), Response.json(APPENDED, { status: 201 }));
    const { foldline, waits } = client(fetch);
    expect(await foldline.append("api:c", EVENT)).toEqual(APPENDED);
    expect(waits).toEqual([2_000]);
    expect(sent).toHaveLength(2);
    expect(sent[1]?.body).toBe(sent[0]?.body);
  });

  it("retries a 429 without a problem body, backing off 1 s, 2 s, 4 s when no Retry-After is given, then gives up", async () => {
    const limited = () => new Response("slow down", { status: 429 });
    const { fetch, sent } = scripted(limited(), limited(), limited(), limited());
    const { foldline, waits } = client(fetch);
    const error = await failure(foldline.context("api:c", { agent: "helper" }));
    expect(error).toMatchObject({ code: "rate_limited", status: 429 });
    expect(waits).toEqual([1_000, 2_000, 4_000]);
    expect(sent).toHaveLength(4);
  });

  it("bounds the attempts as configured", async () => {
    const busy = () => problem(503, { code: "unavailable", message: "busy" }, { "Retry-After": "1" });
    const { fetch, sent } = scripted(busy(), busy());
    const { foldline, waits } = client(fetch, { attempts: 2 });
    expect(await failure(foldline.compose("api:c", { agent: "helper", prompt: { text: "hi" } }))).toMatchObject({ code: "unavailable", retryAfterSeconds: 1 });
    expect(waits).toEqual([1_000]);
    expect(sent).toHaveLength(2);
  });

  it("hands a Retry-After longer than it accepts to the caller at once, never shortened", async () => {
    const { fetch, sent } = scripted(problem(503, { code: "unavailable", message: "shards closed" }, { "Retry-After": "30" }));
    const { foldline, waits } = client(fetch, { maxWaitSeconds: 10 });
    expect(await failure(foldline.append("api:c", EVENT))).toMatchObject({ code: "unavailable", status: 503, retryAfterSeconds: 30 });
    expect(waits).toEqual([]);
    expect(sent).toHaveLength(1);
  });

  it("never resends a DELETE: had it committed, the resend would answer not_found", async () => {
    const { fetch, sent } = scripted(problem(503, { code: "unavailable", message: "busy" }, { "Retry-After": "1" }));
    const { foldline, waits } = client(fetch);
    const error = await failure(foldline.request("delete", "/v1/agents/{agent}/memory/{path}", { path: { agent: "helper", path: "x" } }));
    expect(error.code).toBe("unavailable");
    expect(waits).toEqual([]);
    expect(sent).toHaveLength(1);
  });

  it("retries an RPC answer of `unavailable` like HTTP's 503, with the wait its details name", async () => {
    const answers = [{ ok: false, error: { code: "unavailable", message: "busy", retryAfterSeconds: 3 } }, { ok: true, value: { results: [] } }] as const;
    let calls = 0;
    const binding = { searchMemory: async () => answers[calls++] } as unknown as FoldlineBinding;
    const waits: number[] = [];
    const foldline = createClient({ binding, token: "fl_test", retry: { sleep: async (ms) => void waits.push(ms) } });
    expect(await foldline.searchMemory("api:c", { agent: "helper", q: "x" })).toEqual({ results: [] });
    expect(waits).toEqual([3_000]);
  });

  it("waits for attempt n+1 exactly as retryDelaySeconds says (table)", () => {
    const policy = { attempts: 4, maxWaitSeconds: 60 };
    const error = (status: number | undefined, retryAfterSeconds?: number) =>
      new FoldlineError({ code: status === 429 ? "rate_limited" : status === 503 ? "unavailable" : "internal", message: "", status, retryAfterSeconds });
    const cases: [FoldlineError | Error, number, number | undefined][] = [
      [error(503, 5), 1, 5],
      [error(503), 1, 1],
      [error(503), 3, 4],
      [error(503), 4, undefined],
      [error(429, 0), 1, 0],
      [error(429, 61), 1, undefined],
      [error(500), 1, undefined],
      [error(undefined), 1, undefined],
      [new Error("not ours"), 1, undefined],
    ];
    for (const [failed, attempt, wait] of cases) expect(retryDelaySeconds(failed, attempt, policy), `${failed.message} ${String((failed as FoldlineError).status)} attempt ${attempt}`).toBe(wait);
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("7", now)).toBe(7);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:09 GMT", now)).toBe(9);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
