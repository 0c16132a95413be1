import type { AppError } from "../core/errors";
import { NOT_SERVING_MESSAGE } from "../core/agent-access";
import type { MemoryReader, MemoryRefusal } from "../core/memory-privacy";
import { pageAuthor, pageRefusal, servingRefusal } from "../core/memory-privacy";
import type { RecallCandidate, RecalledPageHit } from "../core/recall-rank";
import { fuseByRank, rankCandidates } from "../core/recall-rank";
import { liveConversationPagePaths, rankConversationPages, readConversationPageVersions, searchConversationPages, searchSharedPages } from "./shard/conversation-memory";
import type { RecalledPage } from "./control/memory-pages";
import { livePagePaths, packWithinBudget, recallPages, searchPages } from "./control/memory-pages";
import type { TurnView } from "./shard/turn-search";
import { searchTurns } from "./shard/turn-search";

/**
 * Memory pages as the rule lets a reader have them (core/memory-privacy), for every path that
 * serves pages: context and compose (durable/memory-serving), search (api/recall), the compactor's
 * recall (durable/planner) and its references (queue/consumer). Two stores, each read where it
 * lives: the pages people wrote for the agent in the control database, and the extracted pages of
 * the conversation being served on its shard; another conversation's only for an agent that
 * shares memory (`memorySharing: "agent"`), searched on every shard and offered to the rule.
 */

export interface MemoryDatabases {
  readonly control: D1Database;
  /** The shard of the reader's conversation. */
  readonly shard: D1Database;
  /** Every shard (`shardsOf`): where an agent that shares memory may have facts of its other conversations. */
  readonly shards: readonly D1Database[];
}

/** What a compaction reads memory from: the control database and its conversation's shard (its recall never shares, `compactionReader`). */
export type ConversationDatabases = Pick<MemoryDatabases, "control" | "shard">;

/** A reader of one agent's memory. */
export interface AgentMemoryReader extends MemoryReader {
  readonly agentId: string;
}

/**
 * The wire form of a refusal, where a route answers one (a conversation's pages). The agent's
 * sources are not named: a caller learns that the agent does not serve this conversation, not where it does.
 */
export function memoryRefused(refusal: MemoryRefusal): AppError {
  switch (refusal.reason) {
    case "not_served":
      return { code: "not_found", message: NOT_SERVING_MESSAGE };
    case "not_readable":
      return { code: "forbidden", message: "this token is not scoped to the conversation the memory comes from" };
    case "other_conversation":
      return { code: "forbidden", message: "memory extracted from one conversation is served in that conversation only" };
    case "direct_chat":
      return { code: "forbidden", message: "memory extracted from a direct chat is served in that chat only" };
    case "unsourced":
      return { code: "not_found", message: "no memory with a source this conversation may be served" };
  }
}

/** A page hit, with the conversation an extracted page is kept with (absent: a person's page, agent-wide). */
export type ServedPageHit = RecalledPageHit & { readonly conversationId?: string };

const allowed =
  (reader: MemoryReader) =>
  (page: { readonly path: string; readonly conversationId?: string | undefined }): boolean =>
    pageRefusal(reader, page) === undefined;

/**
 * The pages that match free `text` and may be served to the reader, best first: the
 * conversation's extracted pages and the agent's pages, at most `limit` of each, fused by rank.
 */
export async function servedPages(db: MemoryDatabases, reader: AgentMemoryReader, text: string, limit: number): Promise<ServedPageHit[]> {
  if (servingRefusal(reader) !== undefined) return [];
  const [person, extracted, shared] = await Promise.all([
    searchPages(db.control, reader.agentId, text, limit),
    searchConversationPages(db.shard, reader.conversationId, reader.agentId, text, limit),
    reader.sharing === "agent" ? sharedPages(db, reader, text, limit) : [],
  ]);
  return fuseByRank<ServedPageHit>(fuseByRank<ServedPageHit>(extracted.filter(allowed(reader)), person.filter(allowed(reader))), shared);
}

/**
 * A shared search reads this many times `limit` per shard before the rule filters: pages of
 * conversations the reader may not be served (a direct chat, one outside the caller's scopes)
 * would otherwise take every place.
 */
const SHARED_OVERREAD = 4;

/**
 * The extracted pages of the agent's other conversations that match `text` and that the rule lets
 * the reader have, at most `limit`: every shard searched at once (the agent's conversations may be
 * on any), each shard's best first, the shards' lists fused by rank (their bm25 statistics differ).
 */
async function sharedPages(db: MemoryDatabases, reader: AgentMemoryReader, text: string, limit: number): Promise<ServedPageHit[]> {
  const found = await Promise.all(db.shards.map((shard) => searchSharedPages(shard, reader.agentId, reader.conversationId, text, limit * SHARED_OVERREAD)));
  const lists = found.map((hits) => hits.filter(allowed(reader)).map((hit) => ({ ...hit, elsewhere: hit.conversationId })));
  return lists.reduce<ServedPageHit[]>((fused, list) => fuseByRank<ServedPageHit>(fused, list), []).slice(0, limit);
}

/**
 * A compaction packet's pages: the conversation's own extracted pages and the agent's pages most
 * relevant to the slice, whole, fused by rank, at most `budgetChars` in all and `maxPages` pages.
 */
export async function packetPages(db: ConversationDatabases, reader: AgentMemoryReader, sliceText: string, budgetChars: number, maxPages: number): Promise<RecalledPage[]> {
  if (budgetChars <= 0 || maxPages <= 0 || servingRefusal(reader) !== undefined) return [];
  const [person, ranked] = await Promise.all([
    recallPages(db.control, reader.agentId, sliceText, budgetChars, maxPages),
    rankConversationPages(db.shard, reader.conversationId, reader.agentId, sliceText),
  ]);
  const own = ranked.filter(allowed(reader)).map((page) => ({ ...page, content: undefined }));
  const people = person.map((page) => ({ ...page, chars: page.content.length, conversationId: undefined }));
  const chosen = packWithinBudget(fuseByRank<(typeof own)[number] | (typeof people)[number]>(own, people), budgetChars, maxPages);
  const bodies = await readConversationPageVersions(db.shard, reader.conversationId, reader.agentId, chosen.filter((page) => page.content === undefined));
  return chosen.map((page) => {
    const content = page.content ?? bodies.get(`${page.version}:${page.path}`);
    // The budget was packed on the stored length; a mismatch would mean a corrupt row, and a
    // packet must not silently exceed its budget.
    if (content === undefined || content.length !== page.chars) {
      throw new Error(`memory page ${reader.conversationId}/${reader.agentId}/${page.path}@${page.version} does not match its stored length`);
    }
    return { path: page.path, version: page.version, contentHash: page.contentHash, content };
  });
}

/**
 * Which of these paths are live pages a compaction of the conversation may name (a compactor's
 * reference to a page its recall did not give it): the agent's pages, and the conversation's own
 * extracted pages. Only whether a path exists is read, for the conversation the packet was planned
 * in; nothing of another conversation is looked up.
 */
export async function livePages(db: ConversationDatabases, compaction: Pick<AgentMemoryReader, "agentId" | "conversationId">, paths: readonly string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const [person, extracted] = await Promise.all([
    livePagePaths(db.control, compaction.agentId, paths.filter((path) => pageAuthor(path) === "person")),
    liveConversationPagePaths(db.shard, compaction.conversationId, compaction.agentId, paths.filter((path) => pageAuthor(path) === "extraction")),
  ]);
  return new Set([...person, ...extracted]);
}

/** Pages read before packing: each yields its matching entries, so a few pages fill a budget. */
const PAGE_CANDIDATES = 20;
/**
 * Turns are read as if each took this many characters: chat turns are short (a budget of a few
 * thousand characters holds dozens), and packing skips the ones that say again what a chosen one
 * said, so the candidates need room beyond what fits.
 */
const MIN_TURN_CHARS = 20;
const MAX_TURN_CANDIDATES = 400;

/**
 * What recall may serve the reader for `query`, best first (`rankCandidates`): the conversation's
 * turns the view admits (older than `view.beforeSeq`, the served tail, when given) and the entries
 * of the pages it may be served, read in numbers that fill `budgetChars` with short turns. The
 * memory envelope and `memory/search` both pack these, so search shows what the agent is served.
 */
export async function recallCandidates(db: MemoryDatabases, reader: AgentMemoryReader, view: TurnView, query: string, budgetChars: number): Promise<RecallCandidate[]> {
  const turns = Math.min(MAX_TURN_CANDIDATES, Math.max(PAGE_CANDIDATES, Math.ceil(budgetChars / MIN_TURN_CHARS)));
  const [pages, found] = await Promise.all([servedPages(db, reader, query, PAGE_CANDIDATES), searchTurns(db.shard, reader.conversationId, query, view, turns)]);
  return rankCandidates(query, pages, found, view.beforeSeq);
}
