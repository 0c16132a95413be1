import { Hono } from "hono";
import { z } from "zod";
import { agentIdSchema, appendBatchRequestSchema, appendEventRequestSchema, reservedForFoldline } from "../core/events";
import type { StoredEvent } from "../core/events";
import { reconstruct } from "../core/reconstruction";
import { composeRequestSchema } from "../core/compose";
import { compose } from "./compose";
import { appendToConversation, contextFor } from "../durable/stub";
import { listEvents, readAllEvents } from "../storage/event-store";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import type { AppEnv } from "./types";
import { readJson, validate } from "./validation";

const pageQuery = z.object({
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

const turnsQuery = pageQuery.extend({
  /** Comma-separated agent ids whose delivered replies count as history; omitted: every agent. */
  agents: z
    .string()
    .max(2_000)
    .transform((list) => list.split(",").filter((id) => id !== ""))
    .pipe(z.array(agentIdSchema).max(64))
    .optional(),
  sensitive: z.enum(["include", "exclude"]).default("exclude"),
});

const contextQuery = z.object({ agent: agentIdSchema });

/** The wire form of a stored event. */
export function eventView(event: StoredEvent) {
  return {
    conversationId: event.conversationId,
    seq: event.seq,
    kind: event.kind,
    idempotencyKey: event.idempotencyKey,
    sensitive: event.sensitive,
    body: event.body,
    hash: event.hash,
    recordedAt: event.recordedAt,
  };
}

export const conversations = new Hono<AppEnv>()
  .post("/:conversation/events", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const request = await readJson(c, appendEventRequestSchema);
    if (!request.ok) return problem(c, request.error);
    const { expectedSeq, ...event } = request.value;
    const reserved = reservedForFoldline(event);
    if (reserved !== undefined) return problem(c, { code: "forbidden", message: reserved });
    const appended = await appendToConversation(c.env, {
      conversationId: conversation.value,
      events: [event],
      expectedSeq,
    });
    if (!appended.ok) return problem(c, appended.error);
    const [result] = appended.value.results;
    if (result === undefined) return problem(c, { code: "internal", message: "append returned no result" });
    return c.json({ event: eventView(result.event), duplicate: result.duplicate }, result.duplicate ? 200 : 201);
  })
  .post("/:conversation/events/batch", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const request = await readJson(c, appendBatchRequestSchema);
    if (!request.ok) return problem(c, request.error);
    for (const [index, event] of request.value.events.entries()) {
      const reserved = reservedForFoldline(event);
      if (reserved !== undefined) return problem(c, { code: "forbidden", message: `events.${index}: ${reserved}`, details: { index } });
    }
    const appended = await appendToConversation(c.env, {
      conversationId: conversation.value,
      events: request.value.events,
      expectedSeq: request.value.expectedSeq,
    });
    if (!appended.ok) return problem(c, appended.error);
    const { results, lastSeq } = appended.value;
    const created = results.some((r) => !r.duplicate);
    return c.json(
      { results: results.map((r) => ({ event: eventView(r.event), duplicate: r.duplicate })), lastSeq },
      created ? 201 : 200,
    );
  })
  .get("/:conversation/events", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const query = validate(pageQuery, c.req.query());
    if (!query.ok) return problem(c, query.error);
    const { after, limit } = query.value;
    const events = await listEvents(c.env.DB, conversation.value, after, limit);
    const last = events.at(-1);
    return c.json({ events: events.map(eventView), nextAfter: events.length === limit && last ? last.seq : null });
  })
  .get("/:conversation/context", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const query = validate(contextQuery, c.req.query());
    if (!query.ok) return problem(c, query.error);
    const selected = await contextFor(c.env, conversation.value, query.value.agent);
    if (!selected.ok) return problem(c, selected.error);
    return c.json(selected.value);
  })
  .post("/:conversation/compose", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const request = await readJson(c, composeRequestSchema);
    if (!request.ok) return problem(c, request.error);
    const selected = await contextFor(c.env, conversation.value, request.value.agent);
    if (!selected.ok) return problem(c, selected.error);
    const composed = await compose(c.env, request.value, selected.value);
    if (!composed.ok) return problem(c, composed.error);
    return c.json(composed.value);
  })
  .get("/:conversation/turns", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const query = validate(turnsQuery, c.req.query());
    if (!query.ok) return problem(c, query.error);
    const { after, limit, agents, sensitive } = query.value;
    const turns = reconstruct(await readAllEvents(c.env.DB, conversation.value), {
      admittedAgents: agents === undefined ? "all" : new Set(agents),
      includeSensitive: sensitive === "include",
    }).filter((turn) => turn.group > after);
    // A page holds whole groups: it may exceed `limit` to finish the group it stopped in.
    let end = Math.min(limit, turns.length);
    while (end < turns.length && turns[end]?.group === turns[end - 1]?.group) end += 1;
    const page = turns.slice(0, end);
    const last = page.at(-1);
    return c.json({ turns: page, nextAfter: end < turns.length && last ? last.group : null });
  });
