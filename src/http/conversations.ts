import { Hono } from "hono";
import { z } from "zod";
import { composeRequest, eventView, ingestBatch, ingestEvent, selectContext } from "../api/conversations";
import { pageQuery } from "../api/queries";
import { readTurnsPage } from "../api/turns";
import { agentIdSchema } from "../core/events";
import { listEvents } from "../storage/event-store";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import type { eventPageSchema, Wire } from "../api/responses";
import type { AppEnv } from "./types";
import { readJson, validate } from "./validation";

/**
 * The conversation routes. Ingest, context and compose are thin wrappers over `api/conversations`
 * (shared with the RPC entrypoint): the route checks scope, reads the body, and maps the Result.
 * The body is read as any JSON here and validated by the operation, so both transports validate
 * with the same schema in the same order (scope, then media type and JSON, then shape).
 */

export const turnsQuery = pageQuery.extend({
  /** Comma-separated agent ids whose delivered replies count as history; omitted: every agent. */
  agents: z
    .string()
    .max(2_000)
    .transform((list) => list.split(",").filter((id) => id !== ""))
    .pipe(z.array(agentIdSchema).max(64))
    .optional(),
  sensitive: z.enum(["include", "exclude"]).default("exclude"),
});

const anyJson = z.unknown();

export const conversations = new Hono<AppEnv>()
  .post("/:conversation/events", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const appended = await ingestEvent(c.env, conversation.value, body.value);
    if (!appended.ok) return problem(c, appended.error);
    return c.json(appended.value, appended.value.duplicate ? 200 : 201);
  })
  .post("/:conversation/events/batch", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const appended = await ingestBatch(c.env, conversation.value, body.value);
    if (!appended.ok) return problem(c, appended.error);
    const created = appended.value.results.some((r) => !r.duplicate);
    return c.json(appended.value, created ? 201 : 200);
  })
  .get("/:conversation/events", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const query = validate(pageQuery, c.req.query());
    if (!query.ok) return problem(c, query.error);
    const { after, limit } = query.value;
    const events = await listEvents(c.env.DB, conversation.value, after, limit);
    const last = events.at(-1);
    return c.json({ events: events.map(eventView), nextAfter: events.length === limit && last ? last.seq : null } satisfies Wire<typeof eventPageSchema>);
  })
  .get("/:conversation/context", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const selected = await selectContext(c.env, conversation.value, c.req.query());
    if (!selected.ok) return problem(c, selected.error);
    return c.json(selected.value);
  })
  .post("/:conversation/compose", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const composed = await composeRequest(c.env, conversation.value, body.value);
    if (!composed.ok) return problem(c, composed.error);
    return c.json(composed.value);
  })
  .get("/:conversation/turns", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const query = validate(turnsQuery, c.req.query());
    if (!query.ok) return problem(c, query.error);
    const { after, limit, agents, sensitive } = query.value;
    // A page holds whole groups: it may exceed `limit` to finish the group it stopped in.
    const policy = { admittedAgents: agents === undefined ? ("all" as const) : new Set(agents), includeSensitive: sensitive === "include" };
    return c.json(await readTurnsPage(c.env.DB, conversation.value, policy, after, limit));
  });
