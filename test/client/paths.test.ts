import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createClient, FoldlineError } from "../../client/index";
import { expandPath } from "../../client/paths";

/**
 * A path parameter names one thing on the route its template names, whatever a caller passes:
 * a bot that hands a user's words to `request(…, { path: { path } })` (a `/forget` command) must
 * not be steerable to another route by `..` segments that URL normalization resolves before the
 * request leaves (`GET /v1/agents/a/memory/../../../ops/health` is `GET /v1/ops/health`). The
 * client refuses such a parameter before sending anything; the packed client is run against the
 * real Worker with the same table in test/client/package.e2e.mjs.
 */

/** A `fetch` that records each URL it is asked for and answers 204. */
function recordingFetch() {
  const urls: string[] = [];
  const fetch = async (input: RequestInfo | URL): Promise<Response> => {
    urls.push(String(input));
    return new Response(null, { status: 204 });
  };
  return { fetch: fetch as typeof globalThis.fetch, urls };
}

/** How a call failed: the client's typed refusal, or whatever else it threw (as text). */
async function failureOf(call: Promise<unknown>): Promise<readonly [string, unknown, unknown] | string> {
  try {
    await call;
    return "sent";
  } catch (error) {
    return error instanceof FoldlineError ? [error.code, error.status, error.details["parameter"]] : String(error);
  }
}

const HOSTILE_PAGE_PATHS = ["../../../ops/health", "../../other-agent/memory/notes/victim", "..", ".", "notes/..", "notes/./x", "./notes", "notes//x", "/notes", "notes/", ""];
const HOSTILE_SEGMENTS = ["..", ".", ""];

describe("the client's path parameters", () => {
  it.each(HOSTILE_PAGE_PATHS)("refuses the page path %j before sending anything", async (path) => {
    const { fetch, urls } = recordingFetch();
    const client = createClient({ baseUrl: "http://127.0.0.1:9/base", token: "fl_x", fetch, retry: { attempts: 1 } });
    for (const method of ["get", "put", "delete"] as const) {
      const call =
        method === "put"
          ? client.request("put", "/v1/agents/{agent}/memory/{path}", { path: { agent: "concierge", path }, body: { content: "x" } })
          : client.request(method, "/v1/agents/{agent}/memory/{path}", { path: { agent: "concierge", path } });
      expect(await failureOf(call)).toEqual(["validation_failed", undefined, "path"]);
    }
    expect(urls).toEqual([]);
  });

  it.each(HOSTILE_SEGMENTS)("refuses the one-segment parameter %j on every method that takes one", async (value) => {
    const { fetch, urls } = recordingFetch();
    const client = createClient({ baseUrl: "http://127.0.0.1:9", token: "fl_x", fetch, retry: { attempts: 1 } });
    const source = { kind: "source", idempotencyKey: "k", body: { messageId: "1", author: { id: "ada" }, text: "hi" } } as const;
    const calls: [string, Promise<unknown>][] = [
      ["agent", client.request("delete", "/v1/agents/{agent}/memory/{path}", { path: { agent: value, path: "notes/x" } })],
      ["agent", client.request("get", "/v1/agents/{agent}", { path: { agent: value } })],
      ["conversation", client.request("get", "/v1/conversations/{conversation}/turns", { path: { conversation: value } })],
      ["conversation", client.append(value, source)],
      ["conversation", client.context(value, { agent: "helper" })],
      ["agent", client.registerAgent(value, {} as never)],
    ];
    for (const [parameter, call] of calls) expect(await failureOf(call)).toEqual(["validation_failed", undefined, parameter]);
    expect(urls).toEqual([]);
  });

  it("sends a well-formed page path as the page it names", async () => {
    const { fetch, urls } = recordingFetch();
    const client = createClient({ baseUrl: "http://127.0.0.1:9", token: "fl_x", fetch });
    await client.request("delete", "/v1/agents/{agent}/memory/{path}", { path: { agent: "concierge", path: "decisions/v1.2/..notes" } });
    expect(urls).toEqual(["http://127.0.0.1:9/v1/agents/concierge/memory/decisions/v1.2/..notes"]);
  });

  it("never lets URL normalization change what it expands, for any parameter it accepts (property)", () => {
    const segmentish = fc.oneof(fc.constantFrom(".", "..", "", "%2e", "%2E%2e", ".%2e", "\\..", "?x", "#y", "a;b", "%00"), fc.string({ unit: "grapheme-composite" }));
    const pagePath = fc.array(segmentish, { minLength: 1, maxLength: 4 }).map((parts) => parts.join("/"));
    fc.assert(
      fc.property(segmentish, pagePath, (agent, path) => {
        let expanded: string;
        try {
          expanded = expandPath("/v1/agents/{agent}/memory/{path}", { agent, path });
        } catch (error) {
          expect(error).toBeInstanceOf(FoldlineError);
          return;
        }
        const url = new URL(`http://127.0.0.1:9${expanded}`);
        expect(url.pathname).toBe(expanded);
        expect(url.search + url.hash).toBe("");
        // The agent is the fourth segment and the page path everything after the sixth, as sent.
        const segments = url.pathname.split("/");
        expect(segments.slice(0, 3)).toEqual(["", "v1", "agents"]);
        expect(decodeURIComponent(segments[3] ?? "")).toBe(agent);
        expect(segments[4]).toBe("memory");
        expect(segments.slice(5).map(decodeURIComponent).join("/")).toBe(path);
      }),
      { seed: 37, numRuns: 500 },
    );
  });
});
