import { z } from "zod";
import type { ScopedConversationId } from "../api/access";
import { verifyLinks } from "../api/chain";
import { selectContext } from "../api/conversations";
import { contextQuery, linkPageQuery } from "../api/queries";
import { memorySearchQuery, searchMemory } from "../api/recall";
import { listTurns, turnsQuery } from "../api/turns";
import { validate } from "../api/validation";
import { conversationIdSchema } from "../core/conversation-id";
import type { Result } from "../core/errors";
import type { ApiPrincipal } from "../storage/control/tokens";
import { shardDatabaseOf } from "../storage/shards";

/**
 * The MCP tools: each one REST read, called as its route calls it (`src/api`), for a conversation
 * the caller's token covers. A tool's `input` is the route's own query schema plus `conversation`
 * (the route's path parameter): it is what `tools/list` shows, and the operation validates the
 * arguments with the same schema, as it does for HTTP and RPC.
 */

export interface FoldlineTool {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly input: z.ZodObject;
  /** The operation, on the conversation already checked against the token's scopes; `args` without `conversation`. */
  readonly run: (env: Env, principal: ApiPrincipal, conversation: ScopedConversationId, args: Record<string, unknown>) => Promise<Result<unknown>>;
}

const conversation = conversationIdSchema.describe("the conversation: telegram:<bot>:<chat>[:<thread>] or api:<key>; the token must cover it");
const agent = (what: string) => contextQuery.shape.agent.describe(what);

/**
 * Turns around a message: the REST turn pages (`GET …/turns`) read from `before` log positions
 * ahead of the message's, so a search hit's `seq` is shown with what was said before and after it.
 * A page here is at most 100 turns (the route allows 500).
 */
const MAX_TURNS = 100;
const MAX_BEFORE = 500;
const turnsAround = z.object({
  seq: z.coerce.number().int().positive().describe("the message's position in the log: a search result's `sources[].seq`, or a turn's `originSeq`"),
  before: z.coerce
    .number()
    .int()
    .min(0)
    .max(MAX_BEFORE)
    .default(20)
    .describe("how many log positions before `seq` to start from (0–500; every event takes one: replies, deliveries and runs too)"),
  limit: z.coerce.number().int().min(1).max(MAX_TURNS).default(20).describe("turns in the page (1–100), exceeded only to finish a group"),
});

const searchTool: FoldlineTool = {
  name: "search_memory",
  title: "Search a conversation's history and memory",
  description:
    "Recall for one agent in one conversation, as GET /v1/conversations/{conversation}/memory/search answers it: the memory pages the agent may be served here " +
    "and the conversation's exact turns it could be served, bm25-ranked and fused, best first, each with a snippet (matched terms between « and »), its content and the messages it comes from " +
    "(`sources`: message id and log position `seq`, for read_turns). The token needs the conversation and `agent:<id>`.",
  input: memorySearchQuery.extend({
    conversation,
    agent: agent("the agent whose memory and view of the conversation is searched"),
    q: memorySearchQuery.shape.q.describe("what to look for, as free text (never search syntax)"),
    limit: memorySearchQuery.shape.limit.describe("most results (1–50)"),
  }),
  run: (env, principal, scoped, args) => searchMemory(env, principal, scoped, args),
};

const contextTool: FoldlineTool = {
  name: "read_context",
  title: "Read an agent's served context",
  description:
    "The agent's verified context, as GET /v1/conversations/{conversation}/context answers it: `messages` (the boundary summary and amendment envelopes, " +
    "with a `query` the recalled-memory envelope, then the exact recent turns) and the private `manifest` (boundary id, hash and coverage, amendments, tail, omitted groups). " +
    "The chain head is verified first; an unverifiable chain is the error `chain_invalid`, never an unverified summary.",
  input: contextQuery.extend({
    conversation,
    agent: agent("the agent whose view is served"),
    query: contextQuery.shape.query.describe("free text to recall memory for (adds the memory envelope); omitted: none"),
  }),
  run: (env, principal, scoped, args) => selectContext(env, scoped, args, principal.scopes),
};

const turnsTool: FoldlineTool = {
  name: "read_turns",
  title: "Read the turns around a message",
  description:
    "The effective turns (edits applied, deletions removed, delivered replies in the group of the message they answer) from `before` log positions ahead of the message at `seq`, " +
    "as GET /v1/conversations/{conversation}/turns?after=<seq − before − 1> answers them: whole groups, `nextAfter` the last group read (null at the end). " +
    "The token needs the conversation.",
  input: turnsQuery.omit({ after: true }).extend({
    conversation,
    ...turnsAround.shape,
    agents: turnsQuery.shape.agents.describe("comma-separated agent ids whose delivered replies count as history; omitted: every agent"),
    sensitive: turnsQuery.shape.sensitive.describe("`include` adds sensitive turns"),
  }),
  run: async (env, _principal, scoped, args) => {
    const { seq, before, ...rest } = args;
    const around = validate(turnsAround, { seq, before, limit: rest["limit"] });
    if (!around.ok) return around;
    const after = Math.max(0, around.value.seq - around.value.before - 1);
    return listTurns(await shardDatabaseOf(env, scoped), scoped, { ...rest, after, limit: around.value.limit });
  },
};

const verifyTool: FoldlineTool = {
  name: "verify_links",
  title: "Verify a page of the boundary chain",
  description:
    "Audits the links of one epoch of the agent's boundary chain at positions after `after`, as GET /v1/conversations/{conversation}/verify/links answers it: each link valid " +
    "or the checks it failed, the epoch's `anchor`, the log's audit for the page, and `nextAfter` to pass as `after` for the next page (null after the last). " +
    "The chain is valid when every page of every epoch is. Boundaries are sensitive: no summary is returned.",
  input: linkPageQuery.extend({
    conversation,
    agent: agent("the agent whose chain is verified"),
    epoch: linkPageQuery.shape.epoch.describe("the epoch to verify; the agent's current epoch when absent"),
    after: linkPageQuery.shape.after.describe("the last position already verified (a page's `nextAfter`); 0 from the first link"),
    limit: linkPageQuery.shape.limit.describe("most positions in the page (1–50)"),
  }),
  run: (env, _principal, scoped, args) => verifyLinks(env, scoped, args),
};

export const TOOLS: readonly FoldlineTool[] = [searchTool, contextTool, turnsTool, verifyTool];
