import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { declaredAgentInScope } from "../api/access";
import { documentBodySchema, documentName, documentReceipt, readAgent, readAgentDocument, registerAgent, uploadDocument } from "../api/agents";
import { currentAgentSchema, documentSummarySchema, registeredAgentSchema, trustedDocumentSchema } from "../api/responses";
import { registrationSchema } from "../core/declarations";
import { scopedAgent } from "./auth";
import { problem } from "./errors";
import { BEARER, operation, pathParameter } from "./openapi/operation";
import { BODY_CODES, problems, SCOPED_CODES } from "./openapi/problem";
import { jsonBody, jsonResponse } from "./openapi/schemas";
import type { AppEnv } from "./types";
import { readJson } from "./validation";

const anyJson = z.unknown();

const agent = pathParameter("agent");

const putAgent = operation({
  method: "put",
  path: "/{agent}",
  operationId: "putAgent",
  tags: ["agents"],
  summary: "Register an agent and its compactor",
  description:
    "Registers the declaration pair. The two must agree on everything the contract lists; `declaration_mismatch` names " +
    "every field on which they disagree. A changed pair (or prompt, or compactor version) is a new epoch. The token needs " +
    "`agent:<id>` and conversation scopes that contain every source pattern the agent has now and would have afterwards " +
    "(`forbidden` names the proposed patterns outside them). An `http` reply names a Worker secret `BOT_HMAC_<NAME>`; " +
    "any other name is `secret_outside_namespace`. Identical concurrent requests are one registration (201 once, 200 after); " +
    "a request that lost the race to a different declaration gets `declaration_conflict` (409): read the current declaration and retry.",
  security: BEARER,
  parameters: [agent],
  request: { body: jsonBody("Registration", registrationSchema) },
  responses: {
    201: jsonResponse("a new revision", "RegisteredAgent", registeredAgentSchema),
    200: jsonResponse("unchanged", "RegisteredAgent", registeredAgentSchema),
    ...problems(["declaration_mismatch", "id_in_use", "declaration_conflict", "unknown_document", "secret_outside_namespace"], SCOPED_CODES, BODY_CODES),
  },
});

const getAgent = operation({
  method: "get",
  path: "/{agent}",
  operationId: "getAgent",
  tags: ["agents"],
  summary: "The current declaration",
  description: "The agent's current declaration pair, revision and epoch.",
  security: BEARER,
  parameters: [agent],
  responses: { 200: jsonResponse("the current revision", "CurrentAgent", currentAgentSchema), ...problems(["not_found"], SCOPED_CODES) },
});

const putDocument = operation({
  method: "put",
  path: "/{agent}/documents/{name}",
  operationId: "putDocument",
  tags: ["agents"],
  summary: "Store a trusted document",
  description: "A trusted identity/memory document, stored under its SHA-256; declarations subscribe to `{ name, hash }`.",
  security: BEARER,
  parameters: [agent, pathParameter("name")],
  request: { body: jsonBody("DocumentBody", documentBodySchema) },
  responses: { 201: jsonResponse("stored", "DocumentSummary", documentSummarySchema), ...problems(SCOPED_CODES, BODY_CODES) },
});

const getDocument = operation({
  method: "get",
  path: "/{agent}/documents/{name}/{hash}",
  operationId: "getDocument",
  tags: ["agents"],
  summary: "Read a trusted document",
  description: "The document stored under this name and hash, re-verified against the hash as it is read.",
  security: BEARER,
  parameters: [agent, pathParameter("name"), pathParameter("hash")],
  responses: { 200: jsonResponse("the document", "TrustedDocument", trustedDocumentSchema), ...problems(["not_found"], SCOPED_CODES) },
});

/**
 * Agent routes: the declaration pair and its trusted identity/memory documents (`api/agents`).
 * Authorized by the token scope `agent:<id>`, separately from conversation scopes.
 */
export const agents = new OpenAPIHono<AppEnv>()
  .openapi(putAgent, async (c) => {
    const named = await scopedAgent(c);
    if (!named.ok) return problem(c, named.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const registered = await registerAgent(c.env, c.get("principal"), named.value, body.value);
    if (!registered.ok) return problem(c, registered.error);
    return c.json(registered.value.agent, registered.value.created ? 201 : 200);
  })
  .openapi(getAgent, async (c) => {
    const agentId = await scopedAgent(c);
    if (!agentId.ok) return problem(c, agentId.error);
    const found = await readAgent(c.env.DB, agentId.value);
    return found.ok ? c.json(found.value) : problem(c, found.error);
  })
  .openapi(putDocument, async (c) => {
    const agentId = await scopedAgent(c);
    // An id held by an agent the caller may not act on answers exactly as a free id does (the
    // request's own receipt), and stores nothing: documents go up before a first registration, so a
    // free id must take them, and a refusal here alone would tell which ids are held.
    if (!agentId.ok && agentId.error.code !== "not_found") return problem(c, agentId.error);
    const name = documentName(c.req.param("name"));
    if (!name.ok) return problem(c, name.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const uploaded = agentId.ok ? await uploadDocument(c.env, agentId.value, name.value, body.value) : documentReceipt(name.value, body.value);
    return uploaded.ok ? c.json({ name: uploaded.value.name, hash: uploaded.value.hash, chars: uploaded.value.chars }, 201) : problem(c, uploaded.error);
  })
  .openapi(getDocument, async (c) => {
    // Read back only for a declared agent: an id nobody declared answers as one held elsewhere.
    const agentId = await declaredAgentInScope(c.env.DB, c.get("principal"), c.req.param("agent"));
    if (!agentId.ok) return problem(c, agentId.error);
    const document = await readAgentDocument(c.env, agentId.value, c.req.param("name"), c.req.param("hash"));
    return document.ok ? c.json(document.value) : problem(c, document.error);
  });
