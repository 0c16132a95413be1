import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { logger } from "../../src/logger";
import { settledChain, waitFor } from "../support/chain";
import { register } from "../support/declarations";
import { extractedBoundary } from "../support/extraction";
import { connect, dataOf, errorOf } from "../support/mcp";
import { call, eventsPath, freshConversation, json, tokenFor } from "./helpers";

/**
 * Workers Logs from the outside: the Worker's entry points are driven through an append, a
 * compaction to settlement, an extraction, a context call and refused requests, and every line the
 * console received is read back. The Worker, its Durable Object and its queue consumer run in the
 * test's isolate, so a spy on `console` sees each of their lines. A marker is planted in every kind
 * of text a conversation carries (messages, authors' names, message ids and idempotency keys, a
 * trusted document, a memory page, and through them the compactor's summary), in the arguments of
 * MCP tool calls, and in what refused requests carried (a path, a body, a token, a tool's name):
 * no line may hold it.
 */

const MARKER = `Quokka${crypto.randomUUID().replaceAll("-", "")}`;
const LEVELS = ["debug", "info", "warn", "error"];

const METHODS = ["debug", "log", "info", "warn", "error"] as const;

/** Every console line written while a test runs, in order, as one string each. */
let lines: string[] = [];
/** How many lines each console method received. */
let calls: Record<(typeof METHODS)[number], number>;

beforeEach(() => {
  lines = [];
  calls = { debug: 0, log: 0, info: 0, warn: 0, error: 0 };
  for (const method of METHODS) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      calls[method] += 1;
      lines.push(args.map(String).join(" "));
    });
  }
});

afterEach(() => {
  vi.restoreAllMocks();
});

type Line = Record<string, unknown> & { event: string; level: string };

/** The lines that parse as log events; a line that does not is kept as `unparsed`. */
function events(): Line[] {
  return lines.map((text) => {
    try {
      return JSON.parse(text) as Line;
    } catch {
      return { event: "unparsed", level: "none", text };
    }
  });
}

/** Waits for a line of `event` whose fields include `fields`; work off the request path logs after the rows a test can poll. */
const loggedLine = (event: string, fields: Record<string, unknown>) =>
  waitFor(async () => events().find((line) => line.event === event && Object.entries(fields).every(([key, value]) => line[key] === value)), `a ${event} line`);

let counter = 0;

describe("Workers Logs", () => {
  it("writes each level to its console method, one JSON object per line", () => {
    const fields = { code: "not_found", status: 404 };
    logger.debug("request.refused", fields);
    logger.info("request.refused", fields);
    logger.warn("request.refused", fields);
    logger.error("request.refused", fields);
    expect(calls).toEqual({ debug: 1, log: 1, info: 0, warn: 1, error: 1 });
    expect(events()).toEqual(LEVELS.map((level) => ({ event: "request.refused", level, ...fields })));
  });

  it("follows an append, a compaction, an extraction, a context call, an MCP session and refusals, and logs none of their text", async () => {
    const conversation = freshConversation("api:logs");
    const agentId = `logs-${Date.now().toString(36)}-${counter++}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const uploaded = await call("PUT", `/v1/agents/${agentId}/documents/identity`, { token, body: { content: `You are Pip; the team's code word is ${MARKER}.` } });
    expect(uploaded.status).toBe(201);
    const { hash } = await json<{ hash: string }>(uploaded);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, documents: [{ name: "identity", hash }] })).status).toBe(201);
    const page = await call("PUT", `/v1/agents/${agentId}/memory/plans/offsite`, { token, body: { content: `The offsite venue in Lisbon is booked under ${MARKER}.` } });
    expect(page.status).toBe(201);

    // Past the trigger: the chain plans, the compactor settles a boundary, and its extraction runs.
    const message = (i: number) => ({
      kind: "source",
      idempotencyKey: `${MARKER}-key-${i}`,
      body: { messageId: `${MARKER}-${i}`, author: { id: "u1", name: `Ada ${MARKER}` }, text: `Message ${i}: the offsite in Lisbon, code word ${MARKER}, stays under ${1000 + i} euros per person.` },
    });
    for (let i = 0; i < 24; i++) expect((await call("POST", eventsPath(conversation), { token, body: message(i) })).status).toBe(201);
    expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events: [message(24), message(25)] } })).status).toBe(201);
    const { chain } = await settledChain(conversation, agentId, 1);
    const [boundary] = chain;
    if (boundary === undefined) throw new Error("no boundary settled");
    // The marker reached the summary, so a line quoting it would show.
    expect(JSON.stringify(boundary.body.content)).toContain(MARKER);
    await extractedBoundary(conversation, boundary.body.id);

    const context = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${agentId}&query=${encodeURIComponent(`Lisbon ${MARKER}`)}`, { token });
    expect(context.status).toBe(200);
    expect(await context.text()).toContain(MARKER);

    // The same reads over MCP, with the marker in their arguments and in what they answer.
    const mcp = await connect(token);
    const found = dataOf(await mcp.callTool({ name: "search_memory", arguments: { conversation, agent: agentId, q: `Lisbon ${MARKER}` } }));
    expect(JSON.stringify(found)).toContain(MARKER);
    expect(JSON.stringify(dataOf(await mcp.callTool({ name: "read_context", arguments: { conversation, agent: agentId, query: `Lisbon ${MARKER}` } })))).toContain(MARKER);
    expect(JSON.stringify(dataOf(await mcp.callTool({ name: "read_turns", arguments: { conversation, seq: 1, limit: 5 } })))).toContain(MARKER);
    dataOf(await mcp.callTool({ name: "verify_links", arguments: { conversation, agent: agentId } }));
    // …and its refusals: another conversation, a malformed argument, an unknown tool, an unknown method.
    expect(errorOf(await mcp.callTool({ name: "read_turns", arguments: { conversation: `api:${MARKER}`, seq: 1 } })).code).toBe("forbidden");
    expect(errorOf(await mcp.callTool({ name: "read_context", arguments: { conversation, agent: `${MARKER} !` } })).code).toBe("validation_failed");
    await expect(mcp.callTool({ name: MARKER, arguments: { conversation } })).rejects.toThrow();
    await mcp.close();
    const unknownMethod = await call("POST", "/mcp", { token, headers: { accept: "application/json, text/event-stream" }, body: { jsonrpc: "2.0", id: 1, method: MARKER, params: { [MARKER]: MARKER } } });
    expect(await unknownMethod.text()).toContain("error");

    // Refusals whose messages would quote what the request carried.
    expect((await call("GET", `/v1/nowhere/${MARKER}`, { token })).status).toBe(404);
    expect((await call("POST", eventsPath(conversation), { token, body: { kind: MARKER, idempotencyKey: MARKER } })).status).toBe(400);
    expect((await call("GET", eventsPath(conversation), { token: `fl_${MARKER}` })).status).toBe(401);

    const runId = boundary.body.run.id;
    await loggedLine("settlement", { conversationId: conversation, runId, outcome: "settled" });
    await loggedLine("extraction", { conversationId: conversation, runId: runId.replace(/^cmp_/, "ext_"), outcome: "extracted" });
    await loggedLine("job.end", { job: "extract", conversationId: conversation, outcome: "done" });

    const logged = events();
    expect(logged.filter((line) => line.event === "unparsed")).toEqual([]);
    for (const line of logged) expect(LEVELS).toContain(line.level);
    for (const text of lines) expect(text.toLowerCase()).not.toContain(MARKER.toLowerCase());

    const ours = logged.filter((line) => line.conversationId === conversation);
    const kinds = new Set(ours.map((line) => line.event));
    for (const kind of ["append", "preflight", "plan", "job.start", "job.end", "settlement", "extraction"]) expect(kinds).toContain(kind);
    const appends = ours.filter((line) => line.event === "append");
    expect(appends.filter((line) => line.path === "batch")).toHaveLength(1);
    expect(appends.filter((line) => line.path === "fast" || line.path === "slow").length).toBeGreaterThanOrEqual(24);
    expect(ours.some((line) => typeof line.ms === "number" && line.ms >= 0)).toBe(true);
    expect(logged.find((line) => line.event === "job.start" && line.job === "compaction" && line.conversationId === conversation)).toMatchObject({ queueWaitMs: expect.any(Number) });
    expect(logged.filter((line) => line.event === "request.refused").map((line) => [line.code, line.status])).toEqual(expect.arrayContaining([["not_found", 404], ["validation_failed", 400], ["unauthorized", 401]]));
  });
});
