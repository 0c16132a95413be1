import { Hono } from "hono";
import { z } from "zod";
import { documentName, readAgent, readAgentDocument, registerAgent, uploadDocument } from "../api/agents";
import { scopedAgent } from "./auth";
import { problem } from "./errors";
import type { AppEnv } from "./types";
import { readJson } from "./validation";

const anyJson = z.unknown();

/**
 * Agent routes: the declaration pair and its trusted identity/memory documents (`api/agents`).
 * Authorized by the token scope `agent:<id>`, separately from conversation scopes.
 */
export const agents = new Hono<AppEnv>()
  .put("/:agent", async (c) => {
    const named = await scopedAgent(c);
    if (!named.ok) return problem(c, named.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const registered = await registerAgent(c.env.DB, c.get("principal"), named.value, body.value);
    if (!registered.ok) return problem(c, registered.error);
    return c.json(registered.value.agent, registered.value.created ? 201 : 200);
  })
  .get("/:agent", async (c) => {
    const agentId = await scopedAgent(c);
    if (!agentId.ok) return problem(c, agentId.error);
    const agent = await readAgent(c.env.DB, agentId.value);
    return agent.ok ? c.json(agent.value) : problem(c, agent.error);
  })
  .put("/:agent/documents/:name", async (c) => {
    const agentId = await scopedAgent(c);
    if (!agentId.ok) return problem(c, agentId.error);
    const name = documentName(c.req.param("name"));
    if (!name.ok) return problem(c, name.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const uploaded = await uploadDocument(c.env, agentId.value, name.value, body.value);
    return uploaded.ok ? c.json(uploaded.value, 201) : problem(c, uploaded.error);
  })
  .get("/:agent/documents/:name/:hash", async (c) => {
    const agentId = await scopedAgent(c);
    if (!agentId.ok) return problem(c, agentId.error);
    const document = await readAgentDocument(c.env, agentId.value, c.req.param("name"), c.req.param("hash"));
    return document.ok ? c.json(document.value) : problem(c, document.error);
  });
