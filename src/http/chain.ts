import { OpenAPIHono } from "@hono/zod-openapi";
import { listChain, verifyChain, verifyLinks } from "../api/chain";
import { agentQuery, chainListQuery, linkPageQuery } from "../api/queries";
import { chainAuditSchema, chainListingSchema, linkPageSchema } from "../api/responses-chain";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import { BEARER, operation, pathParameter, queryParameters } from "./openapi/operation";
import { problems, QUERY_CODES, SCOPED_CODES } from "./openapi/problem";
import { jsonResponse } from "./openapi/schemas";
import type { AppEnv } from "./types";

/**
 * The operator's view of an agent's boundary chain in one conversation, under `/v1/conversations`:
 * `chain` lists every boundary of every epoch as stored, `verify` re-derives every link's claims,
 * `verify/links` does the same for one page of an epoch's links.
 * Thin wrappers over `api/chain`, which the RPC entrypoint shares.
 */

const conversation = pathParameter("conversation");

const listChainRoute = operation({
  method: "get",
  path: "/{conversation}/chain",
  operationId: "listChain",
  tags: ["chain"],
  summary: "The boundary chain",
  description:
    "The agent's boundaries in this conversation, across epochs, oldest first, a page at a time (`limit`, 1–200, 100 unless " +
    "asked; pass `nextAfter` as `after` for the next page). Previews only: boundaries are sensitive. " +
    "`health` says whether the chain is moving: the plan in flight (its age, how often its job was sent, its failed attempts, " +
    "when its watchdog fires next), the re-plan time of a chain backing off after a dead-letter, and the newest compaction failure.",
  security: BEARER,
  parameters: [
    conversation,
    ...queryParameters(chainListQuery, {
      agent: "the agent whose chain is listed",
      after: "the id of the last boundary already listed (the previous page's `nextAfter`); absent: from the oldest",
      limit: "how many boundaries to list, 1–200 (100)",
    }),
  ],
  responses: { 200: jsonResponse("a page of boundaries, oldest first", "ChainListing", chainListingSchema), ...problems(["not_found"], SCOPED_CODES, QUERY_CODES) },
});

const verifyChainRoute = operation({
  method: "get",
  path: "/{conversation}/verify",
  operationId: "verifyChain",
  tags: ["chain"],
  summary: "Verify the boundary chain",
  description:
    "Recomputes every hash from D1 events and R2 packets and reports each link valid or the checks it failed, and each " +
    "epoch's `anchor`: whether its newest stored boundary is the one the log's newest completed run settled, with the same " +
    "hash and content hash (a head row deleted or rewritten behind the service's back fails it). It reads the " +
    "whole log and every packet of every epoch, so a chain of more than 100 boundaries or a log of more than 20,000 events " +
    "is refused (413 `payload_too_large`, its sizes in `details`): `verifyLinks` audits any length a page at a time.",
  security: BEARER,
  parameters: [conversation, ...queryParameters(agentQuery, { agent: "the agent whose chain is verified" })],
  responses: {
    200: jsonResponse("the audit: every link with its verdict", "ChainAudit", chainAuditSchema),
    ...problems(["not_found", "payload_too_large"], SCOPED_CODES, QUERY_CODES),
  },
});

const verifyLinksRoute = operation({
  method: "get",
  path: "/{conversation}/verify/links",
  operationId: "verifyLinks",
  tags: ["chain"],
  summary: "Verify a page of the boundary chain",
  description:
    "Audits the links of one epoch at positions after `after`, each exactly as `verifyChain` reports it, at the cost of the " +
    "page alone: its boundary rows and their neighbours, its plans, packets and completed-run receipts, and the ranges of " +
    "the log its frozen slices were cut from. Every page also carries the epoch's `anchor`, as `verifyChain` reports it. " +
    "Follow `nextAfter` to verify a chain of any length; it is valid when every " +
    "page of every epoch is. An epoch the agent never had is an empty page.",
  security: BEARER,
  parameters: [
    conversation,
    ...queryParameters(linkPageQuery, {
      agent: "the agent whose chain is verified",
      epoch: "the epoch to verify; the agent's current epoch when absent",
      after: "the last position already verified; 0 from the first link",
      limit: "most positions in the page (1–50)",
    }),
  ],
  responses: {
    200: jsonResponse("the page: its links with their verdicts, and `nextAfter`", "LinkPage", linkPageSchema),
    ...problems(["not_found"], SCOPED_CODES, QUERY_CODES),
  },
});

export const chainRoutes = new OpenAPIHono<AppEnv>()
  .openapi(listChainRoute, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const listed = await listChain(c.env, scoped.value, c.req.query());
    if (!listed.ok) return problem(c, listed.error);
    return c.json(listed.value);
  })
  .openapi(verifyChainRoute, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const audited = await verifyChain(c.env, scoped.value, c.req.query());
    if (!audited.ok) return problem(c, audited.error);
    return c.json(audited.value);
  })
  .openapi(verifyLinksRoute, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const page = await verifyLinks(c.env, scoped.value, c.req.query());
    if (!page.ok) return problem(c, page.error);
    return c.json(page.value);
  });
