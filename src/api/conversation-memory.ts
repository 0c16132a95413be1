import type { Result } from "../core/errors";
import { NOT_SERVING_MESSAGE } from "../core/agent-access";
import { fail, ok } from "../core/errors";
import { agentIdSchema } from "../core/events";
import { parsePage } from "../core/fact-merge";
import type { MemoryReader } from "../core/memory-privacy";
import { agentReader } from "../core/memory-privacy";
import { factRefusal, pageRefusal, servingRefusal } from "../core/memory-privacy";
import { currentDeclaration } from "../storage/control/declarations";
import { getConversationPage, listConversationPages, MAX_LIST_CONVERSATION_PAGES, readConversationFactSources } from "../storage/shard/conversation-memory";
import { shardDatabaseOf } from "../storage/shards";
import type { ApiPrincipal } from "../storage/control/tokens";
import type { ScopedConversationId } from "./access";
import { agentScopeHeld } from "./access";
import { memoryListQuery, memoryVersionQuery, pageView, summaryView } from "./memory";
import type { memoryPageListSchema, memoryPageSchema, Wire } from "./responses";
import { memoryRefused } from "../storage/served-memory";
import { validate } from "./validation";

/**
 * A conversation's extracted memory for one agent: its pages under `extracted/` (list, and read a
 * version with each fact's sources). The facts were said in this conversation and are kept with
 * it, on its shard, so reading them takes what reading the conversation takes (its scope, checked
 * by the route) plus the agent's scope, and core/memory-privacy: only while the conversation is
 * within the agent's current sources.
 */

export const conversationMemoryListQuery = memoryListQuery.extend({ agent: agentIdSchema });
export const conversationMemoryPageQuery = memoryVersionQuery.extend({ agent: agentIdSchema });

interface Reading {
  readonly agentId: string;
  readonly reader: MemoryReader;
  readonly shard: D1Database;
}

/** The reader of the agent's memory in this conversation, or why there is none. */
async function reading(env: Env, principal: ApiPrincipal, conversationId: ScopedConversationId, agent: unknown): Promise<Result<Reading>> {
  const agentId = agentScopeHeld(principal, agent);
  if (!agentId.ok) return agentId;
  const declaration = await currentDeclaration(env.DB, agentId.value);
  if (declaration === undefined) return fail("not_found", NOT_SERVING_MESSAGE);
  const reader = agentReader(conversationId, declaration.registration.agent, principal.scopes);
  const refusal = servingRefusal(reader);
  if (refusal !== undefined) return { ok: false, error: memoryRefused(refusal) };
  return ok({ agentId: agentId.value, reader, shard: await shardDatabaseOf(env, conversationId) });
}


/** `{ agent, after?, limit? }`: the conversation's live extracted pages in path order, paged by path. */
export async function listConversationMemory(env: Env, principal: ApiPrincipal, conversationId: ScopedConversationId, query: unknown): Promise<Result<Wire<typeof memoryPageListSchema>>> {
  const parsed = validate(conversationMemoryListQuery, query);
  if (!parsed.ok) return parsed;
  const read = await reading(env, principal, conversationId, parsed.value.agent);
  if (!read.ok) return read;
  const { after, limit } = parsed.value;
  const { agentId, reader, shard } = read.value;
  const pages = await listConversationPages(shard, conversationId, agentId, { after, limit: Math.min(limit, MAX_LIST_CONVERSATION_PAGES) });
  const last = pages.at(-1);
  return ok({ pages: pages.filter((page) => pageRefusal(reader, page) === undefined).map(summaryView), nextAfter: pages.length === limit && last ? last.path : null });
}

/** `{ agent, version?, provenance? }`: one extracted page of the conversation, with `provenance=1` each fact and the messages it came from. */
export async function readConversationMemory(
  env: Env,
  principal: ApiPrincipal,
  conversationId: ScopedConversationId,
  path: string,
  query: unknown,
): Promise<Result<Wire<typeof memoryPageSchema>>> {
  const parsed = validate(conversationMemoryPageQuery, query);
  if (!parsed.ok) return parsed;
  const read = await reading(env, principal, conversationId, parsed.value.agent);
  if (!read.ok) return read;
  const { agentId, reader, shard } = read.value;
  const page = await getConversationPage(shard, conversationId, agentId, path, parsed.value.version);
  if (page === undefined || pageRefusal(reader, page) !== undefined) {
    const which = parsed.value.version === undefined ? "" : ` at version ${parsed.value.version}`;
    return fail("not_found", `no extracted page ${path}${which} for agent ${agentId} in this conversation`);
  }
  if (parsed.value.provenance === "0") return ok(pageView(page));
  const sources = await readConversationFactSources(shard, conversationId, agentId, page.path, page.version);
  const served = Map.groupBy(
    sources.filter((row) => factRefusal(reader, row.conversationId) === undefined),
    (row) => row.factKey,
  );
  const facts = [...parsePage(page.content).keys()].map((key) => ({
    key,
    sources: (served.get(key) ?? []).map((row) => ({ conversationId: row.conversationId, messageId: row.messageId, seq: row.seq, eventHash: row.eventHash, runId: row.runId, version: row.version })),
  }));
  return ok({ ...pageView(page), facts });
}
