import { Hono } from "hono";
import { z } from "zod";
import { composeRequest, ingestBatch, ingestEvent, listConversationEvents, selectContext } from "../api/conversations";
import { listTurns } from "../api/turns";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import type { AppEnv } from "./types";
import { readJson } from "./validation";

/**
 * The conversation routes, thin wrappers over `api/conversations` and `api/turns` (shared with the
 * RPC entrypoint): the route checks scope, reads the body, and maps the Result. The body is read as
 * any JSON here and validated by the operation, so both transports validate with the same schema in
 * the same order (scope, then media type and JSON, then shape).
 */

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
    const page = await listConversationEvents(c.env.DB, conversation.value, c.req.query());
    return page.ok ? c.json(page.value) : problem(c, page.error);
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
    const page = await listTurns(c.env.DB, conversation.value, c.req.query());
    return page.ok ? c.json(page.value) : problem(c, page.error);
  });
