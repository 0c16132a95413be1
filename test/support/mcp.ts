import { exports } from "cloudflare:workers";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { expect } from "vitest";
import { D1_METER_HEADER, D1_READS_HEADER } from "../../bench/worker/d1-meter";

/**
 * The MCP SDK's own client (`@modelcontextprotocol/client`, its Streamable HTTP transport) on the
 * Worker under test: its `fetch` is the Worker's, so every message crosses `/mcp` as HTTP.
 */

const ORIGIN = "http://foldline.test";
export const FRAME = "untrusted-history-summary";

export interface Seen {
  readonly method: string | undefined;
  readonly status: number;
  readonly reads: string | null;
}

/** A fetch that reaches the Worker, recording each request's path, status and D1 reads. */
function workerFetch(seen: Seen[] = [], meter = false) {
  return async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(url, init);
    if (meter) request.headers.set(D1_METER_HEADER, "on");
    const method = request.method === "POST" ? ((await request.clone().json()) as { method?: string }).method : request.method;
    const response = await exports.default.fetch(request);
    seen.push({ method, status: response.status, reads: response.headers.get(D1_READS_HEADER) });
    return response;
  };
}

/**
 * The two protocol eras the client speaks: the 2025 `initialize` handshake (its default, served by
 * the SDK's stateless fallback) and the 2026-07-28 revision, pinned.
 */
export const ERAS = ["legacy", "2026-07-28"] as const;
export type Era = (typeof ERAS)[number];

export async function connect(token: string | undefined, options: { seen?: Seen[]; meter?: boolean; era?: Era } = {}): Promise<Client> {
  const era = options.era ?? "legacy";
  const client = new Client({ name: "foldline-test", version: "1.0.0" }, { versionNegotiation: { mode: era === "legacy" ? "legacy" : { pin: era } } });
  const transport = new StreamableHTTPClientTransport(new URL(`${ORIGIN}/mcp`), {
    fetch: workerFetch(options.seen, options.meter),
    ...(token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  });
  await client.connect(transport);
  return client;
}

export type ToolAnswer = Awaited<ReturnType<Client["callTool"]>>;

export const textOf = (answer: ToolAnswer): string => {
  const [first, ...rest] = answer.content as { type: string; text?: string }[];
  expect(rest).toEqual([]);
  expect(first?.type).toBe("text");
  return first?.text ?? "";
};

const ENVELOPE = new RegExp(`^<${FRAME} kind="memory">\\n[^\\n]+\\n\\n([^\\n]*)\\n</${FRAME}>$`);

/** A successful answer's value: the one line of the memory envelope's body, unescaped, as JSON. */
export function dataOf(answer: ToolAnswer): unknown {
  expect(answer.isError ?? false).toBe(false);
  expect(answer.structuredContent).toBeUndefined();
  const body = ENVELOPE.exec(textOf(answer))?.[1];
  expect(body, "the answer is one memory envelope").toBeDefined();
  return JSON.parse((body ?? "").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&"));
}

/** A refusal's REST error body. */
export function errorOf(answer: ToolAnswer): { code: string; message: string; [detail: string]: unknown } {
  expect(answer.isError).toBe(true);
  const body = JSON.parse(textOf(answer)) as { error: { code: string; message: string } };
  expect(answer.structuredContent).toEqual(body);
  return body.error;
}
