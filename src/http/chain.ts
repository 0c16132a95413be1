import { Hono } from "hono";
import { listChain, verifyChain, verifyLinks } from "../api/chain";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import type { AppEnv } from "./types";

/**
 * The operator's view of an agent's boundary chain in one conversation, under `/v1/conversations`:
 * `chain` lists every boundary of every epoch as stored, `verify` re-derives every link's claims,
 * `verify/links` does the same for one page of an epoch's links.
 * Thin wrappers over `api/chain`, which the RPC entrypoint shares.
 */
export const chainRoutes = new Hono<AppEnv>()
  .get("/:conversation/chain", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const listed = await listChain(c.env, conversation.value, c.req.query());
    if (!listed.ok) return problem(c, listed.error);
    return c.json(listed.value);
  })
  .get("/:conversation/verify", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const audited = await verifyChain(c.env, conversation.value, c.req.query());
    if (!audited.ok) return problem(c, audited.error);
    return c.json(audited.value);
  })
  .get("/:conversation/verify/links", async (c) => {
    const conversation = scopedConversation(c);
    if (!conversation.ok) return problem(c, conversation.error);
    const page = await verifyLinks(c.env, conversation.value, c.req.query());
    if (!page.ok) return problem(c, page.error);
    return c.json(page.value);
  });
