import { Hono } from "hono";
import { z } from "zod";
import { canonicalRegistration, documentNameSchema, epochOf, pairMismatches, registrationSchema, replySecretRefusal, sha256Schema } from "../core/declarations";
import { sha256Hex } from "../core/hash";
import { compactorPrompt } from "../core/prompts";
import { registrationWarnings } from "../core/registration-warnings";
import { currentDeclaration, documentExists, idHolders, insertDeclaration, insertDocument } from "../storage/compaction-store";
import { putDocument, readDocument } from "../storage/document-store";
import { scopedAgent } from "./auth";
import { problem } from "./errors";
import type { currentAgentSchema, documentSummarySchema, registeredAgentSchema, trustedDocumentSchema, Wire } from "../api/responses";
import type { AppEnv } from "./types";
import { readJson } from "./validation";

export const documentBodySchema = z.strictObject({ content: z.string().min(1).max(200_000).refine((s) => s.isWellFormed(), "unpaired surrogate") });

const documentKey = (agentId: string, name: string, hash: string): string => `documents/${agentId}/${name}/${hash}`;

/**
 * Agent routes: the declaration pair and its trusted identity/memory documents. Authorized by the
 * token scope `agent:<id>`, separately from conversation scopes.
 */
export const agents = new Hono<AppEnv>()
  .put("/:agent", async (c) => {
    const named = await scopedAgent(c);
    if (!named.ok) return problem(c, named.error);
    const request = await readJson(c, registrationSchema);
    if (!request.ok) return problem(c, request.error);
    const registration = canonicalRegistration(request.value);
    if (registration.agent.id !== named.value) {
      return problem(c, { code: "validation_failed", message: "agent.id must be the agent named in the path" });
    }
    // The pair check below makes the compactor's sources equal to these.
    const agentId = await scopedAgent(c, registration.agent.sources);
    if (!agentId.ok) return problem(c, agentId.error);
    const secretRefused = replySecretRefusal(registration.agent.reply);
    if (secretRefused !== undefined) return problem(c, secretRefused);
    const mismatches = pairMismatches(registration.agent, registration.compactor);
    if (mismatches.length > 0) {
      return problem(c, {
        code: "declaration_mismatch",
        message: `the agent and compactor declarations disagree on: ${mismatches.map((m) => m.field).join(", ")}`,
        details: { mismatches: mismatches.map((m) => ({ field: m.field, agent: JSON.stringify(m.agent), compactor: JSON.stringify(m.compactor) })) },
      });
    }
    const ids = [registration.agent.id, registration.compactor.id];
    const clash = (await idHolders(c.env.DB, ids)).find((holder) => holder.agentId !== registration.agent.id);
    if (clash !== undefined) {
      // Which agent holds it is not this caller's to know.
      return problem(c, { code: "id_in_use", message: `another declaration already uses one of ${ids.join(", ")}; choose other ids` });
    }
    for (const doc of registration.agent.documents) {
      if (!(await documentExists(c.env.DB, agentId.value, doc.name, doc.hash))) {
        return problem(c, { code: "unknown_document", message: `document ${doc.name}@${doc.hash} was never uploaded for this agent` });
      }
    }
    const prompt = compactorPrompt(registration.compactor.outputMode, registration.compactor.prompt);
    const epoch = epochOf(registration, prompt);
    const written = await insertDeclaration(c.env.DB, registration, epoch, prompt, sha256Hex(prompt), new Date().toISOString());
    if (written.kind === "conflict") {
      return problem(c, {
        code: "declaration_conflict",
        message: "another registration of this agent was stored while this one was decided; read the current declaration and retry",
        details: { currentRevision: written.current?.revision ?? null },
      });
    }
    const { declaration } = written;
    return c.json(
      {
        agentId: declaration.agentId,
        revision: declaration.revision,
        epoch: declaration.epoch,
        promptHash: declaration.promptHash,
        registration: declaration.registration,
        warnings: registrationWarnings(declaration.registration),
      } satisfies Wire<typeof registeredAgentSchema>,
      written.kind === "created" ? 201 : 200,
    );
  })
  .get("/:agent", async (c) => {
    const agentId = await scopedAgent(c);
    if (!agentId.ok) return problem(c, agentId.error);
    const declaration = await currentDeclaration(c.env.DB, agentId.value);
    if (declaration === undefined) return problem(c, { code: "not_found", message: "no declaration for this agent" });
    return c.json({
      agentId: declaration.agentId,
      revision: declaration.revision,
      epoch: declaration.epoch,
      promptHash: declaration.promptHash,
      registration: declaration.registration,
      createdAt: declaration.createdAt,
    } satisfies Wire<typeof currentAgentSchema>);
  })
  .put("/:agent/documents/:name", async (c) => {
    const agentId = await scopedAgent(c);
    if (!agentId.ok) return problem(c, agentId.error);
    const name = documentNameSchema.safeParse(c.req.param("name"));
    if (!name.success) return problem(c, { code: "validation_failed", message: "name: 1–128 letters, digits, . _ -" });
    const request = await readJson(c, documentBodySchema);
    if (!request.ok) return problem(c, request.error);
    const hash = sha256Hex(request.value.content);
    const key = documentKey(agentId.value, name.data, hash);
    await putDocument(c.env.DOCUMENTS, key, request.value.content);
    await insertDocument(c.env.DB, agentId.value, name.data, hash, key, request.value.content.length, new Date().toISOString());
    return c.json({ name: name.data, hash, chars: request.value.content.length } satisfies Wire<typeof documentSummarySchema>, 201);
  })
  .get("/:agent/documents/:name/:hash", async (c) => {
    const agentId = await scopedAgent(c);
    if (!agentId.ok) return problem(c, agentId.error);
    const name = c.req.param("name");
    const hash = c.req.param("hash");
    if (!documentNameSchema.safeParse(name).success || !sha256Schema.safeParse(hash).success) {
      return problem(c, { code: "validation_failed", message: "expected /documents/<name>/<sha256>" });
    }
    const read = await readDocument(c.env.DOCUMENTS, documentKey(agentId.value, name, hash), hash);
    if (!read.ok) return problem(c, { code: "not_found", message: `document ${name}@${hash} not found (${read.reason})` });
    return c.json({ name, hash, content: read.text } satisfies Wire<typeof trustedDocumentSchema>);
  });
