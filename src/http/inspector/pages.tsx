import { Hono } from "hono";
import { z } from "zod";
import { conversationInScope } from "../../api/access";
import { agentIdSchema } from "../../core/events";
import { listConversations } from "../../storage/inspector-store";
import { validate } from "../../api/validation";
import { loadConversation } from "./conversation-model";
import { parseFactCursor } from "./paths";
import { errorPage } from "./respond";
import type { InspectorEnv } from "./types";
import { ConversationListPage } from "./views/conversation-list-page";
import { ConversationPage } from "./views/conversation-page";
import { shardMap } from "../../storage/shards";

const LIST_PAGE = 50;

const listQuery = z.object({
  /** The last conversation id of the previous page ('' from the start). */
  after: z.string().max(256).default(""),
  limit: z.coerce.number().int().min(1).max(200).default(LIST_PAGE),
});

const sequenceCursor = z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional();

const conversationQuery = z.object({
  agent: agentIdSchema.optional(),
  /** Timeline: events with a smaller sequence number (omitted: the newest). */
  before: sequenceCursor,
  /** Runs: run events with a smaller sequence number (omitted: the newest). */
  runsBefore: sequenceCursor,
  /** Memory: facts after this `<path>:<fact key>` (omitted: from the first). */
  memory: z
    .string()
    .max(300)
    .transform((text, ctx) => {
      const cursor = parseFactCursor(text);
      if (cursor === undefined) ctx.addIssue({ code: "custom", message: "expected <path>:<fact key>" });
      return cursor ?? z.NEVER;
    })
    .optional(),
});

/** The HTML pages behind the login (`requireSession` has set the principal). */
export const pageRoutes = new Hono<InspectorEnv>()
  .get("/", async (c) => {
    const query = validate(listQuery, c.req.query());
    if (!query.ok) return errorPage(c, query.error, true);
    const { scopes } = c.get("principal");
    const { after, limit } = query.value;
    const page = await listConversations(c.env.DB, shardMap(c.env), scopes, after, limit);
    return c.html(<ConversationListPage scopes={scopes} conversations={page.conversations} nextAfter={page.nextAfter} first={after === ""} limit={limit === LIST_PAGE ? undefined : limit} />);
  })
  .get("/conversations/:conversation", async (c) => {
    // Scope first, as on /v1: a conversation outside the token gets the same refusal whether or not it exists.
    const conversation = conversationInScope(c.get("principal"), c.req.param("conversation"));
    if (!conversation.ok) return errorPage(c, conversation.error, true);
    const query = validate(conversationQuery, c.req.query());
    if (!query.ok) return errorPage(c, query.error, true);
    const model = await loadConversation(c.env, conversation.value, query.value, c.get("principal").scopes);
    return c.html(<ConversationPage model={model} query={query.value} />);
  });
