import type { ComposeRequest } from "../core/compose";
import { NOT_SERVING_MESSAGE } from "../core/agent-access";
import { buildChatRequest } from "../core/compose";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import type { ContextSelection } from "../core/context-manifest";
import { currentDeclaration } from "../storage/control/declarations";
import { readTrustedDocuments } from "../storage/r2/documents";

/** Reads the agent's subscribed documents (hash-verified) and builds the provider request. */
export async function compose(env: Env, request: ComposeRequest, selection: ContextSelection) {
  const declaration = await currentDeclaration(env.DB, request.agent);
  if (declaration === undefined) return fail("not_found", NOT_SERVING_MESSAGE);
  const { agent } = declaration.registration;
  const trusted = await readTrustedDocuments(env.DOCUMENTS, agent);
  if (!trusted.ok) return fail(trusted.error.code, trusted.error.message);
  const { documents } = trusted.value;
  const composed: Result<{ request: ReturnType<typeof buildChatRequest>; manifest: ContextSelection["manifest"] & { documents: { name: string; hash: string; chars: number }[] } }> = ok({
    request: buildChatRequest(agent.provider.model, documents, selection.messages, request.prompt),
    manifest: { ...selection.manifest, documents: documents.map((d) => ({ name: d.name, hash: d.hash, chars: d.content.length })) },
  });
  return composed;
}
