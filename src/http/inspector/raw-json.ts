import { Hono } from "hono";
import { conversationInScope } from "../../api/access";
import { packetLocation } from "../../core/chain-audit";
import { readBoundaryInConversation } from "../../storage/shard/boundary-audit";
import { readPlansByRunIds } from "../../storage/shard/plans";
import { readDocument } from "../../storage/r2/documents";
import { problem } from "../errors";
import { inlineJson } from "./respond";
import type { InspectorEnv } from "./types";
import { shardDatabaseOf } from "../../storage/shards";

const JSON_SUFFIX = ".json";

/**
 * Raw JSON one click from the page, behind the same session and scopes. A boundary is served only
 * under its own conversation: another conversation's boundary id is `not_found` here, the same
 * answer as an id that does not exist.
 */
export const rawJsonRoutes = new Hono<InspectorEnv>()
  .get("/conversations/:conversation/boundaries/:boundaryFile{[^/]+\\.json}", async (c) => {
    const conversation = conversationInScope(c.get("principal"), c.req.param("conversation"));
    if (!conversation.ok) return problem(c, conversation.error);
    const boundaryId = c.req.param("boundaryFile").slice(0, -JSON_SUFFIX.length);
    const boundary = await readBoundaryInConversation(await shardDatabaseOf(c.env, conversation.value), conversation.value, boundaryId);
    if (boundary === undefined) return problem(c, { code: "not_found", message: "no such boundary in this conversation" });
    // The row as stored (its body as the exact text that was hashed) and the body parsed, for reading.
    const { body, bodyText, ...row } = boundary;
    return inlineJson(c, JSON.stringify({ row: { ...row, body: bodyText }, body }, null, 2));
  })
  .get("/conversations/:conversation/boundaries/:boundaryId/packet.json", async (c) => {
    const conversation = conversationInScope(c.get("principal"), c.req.param("conversation"));
    if (!conversation.ok) return problem(c, conversation.error);
    const shard = await shardDatabaseOf(c.env, conversation.value);
    const boundary = await readBoundaryInConversation(shard, conversation.value, c.req.param("boundaryId"));
    if (boundary === undefined) return problem(c, { code: "not_found", message: "no such boundary in this conversation" });
    // The packet the boundary's run compacted, located as the chain audit locates it: the plan's
    // key and hash first (what the queued job named), else the boundary's own claim.
    const plan = (await readPlansByRunIds(shard, [boundary.runId])).get(boundary.runId);
    const location = packetLocation(boundary, plan);
    if (location === undefined) return problem(c, { code: "not_found", message: "neither a plan nor the boundary body names a packet" });
    const read = await readDocument(c.env.DOCUMENTS, location.key, location.hash);
    if (!read.ok) {
      return read.reason === "missing"
        ? problem(c, { code: "not_found", message: `packet ${location.key} is missing from R2` })
        : problem(c, {
            code: "chain_invalid",
            message: `packet ${location.key} does not hash to what its plan recorded; it is not served as this boundary's packet`,
            details: { reason: "divergent_hash" },
          });
    }
    return inlineJson(c, read.text);
  });
