import type { ComposeRequest, TrustedDocument } from "../core/compose";
import type { AgentDeclaration } from "../core/declarations";
import { buildChatRequest } from "../core/compose";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import type { ContextSelection } from "../core/context-manifest";
import { currentDeclaration } from "../storage/control/declarations";
import { readTrustedDocuments as readDocuments } from "../storage/r2/documents";

/** The agent's subscribed trusted documents, each hash-verified, within the document budget. */
export async function readTrustedDocuments(env: Env, agent: AgentDeclaration): Promise<Result<TrustedDocument[]>> {
  const read = await readDocuments(env.DOCUMENTS, agent.id, agent.documents);
  if (!read.ok) return read;
  const documents = read.value;
  const documentChars = documents.reduce((n, d) => n + d.content.length, 0);
  if (documentChars > agent.documentBudgetChars) {
    return fail("document_budget_exceeded", `the subscribed documents need ${documentChars} characters; the budget is ${agent.documentBudgetChars}`);
  }
  return ok(documents);
}

/** Reads the agent's subscribed documents (hash-verified) and builds the provider request. */
export async function compose(env: Env, request: ComposeRequest, selection: ContextSelection) {
  const declaration = await currentDeclaration(env.DB, request.agent);
  if (declaration === undefined) return fail("not_found", `agent ${request.agent} has no declaration`);
  const { agent } = declaration.registration;
  const trusted = await readTrustedDocuments(env, agent);
  if (!trusted.ok) return trusted;
  const documents = trusted.value;
  const composed: Result<{ request: ReturnType<typeof buildChatRequest>; manifest: ContextSelection["manifest"] & { documents: { name: string; hash: string; chars: number }[] } }> = ok({
    request: buildChatRequest(agent.provider.model, documents, selection.messages, request.prompt),
    manifest: { ...selection.manifest, documents: documents.map((d) => ({ name: d.name, hash: d.hash, chars: d.content.length })) },
  });
  return composed;
}
