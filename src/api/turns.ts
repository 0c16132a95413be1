import { z } from "zod";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import type { StoredEvent } from "../core/events";
import { agentIdSchema } from "../core/events";
import type { ReconstructionPolicy, Turn } from "../core/reconstruction";
import { idsNamedBy, pageOfTurns } from "../core/turn-pages";
import type { turnPageSchema, Wire } from "./responses";
import { readRelatedEvents } from "../storage/shard/context-reads";
import { listEvents } from "../storage/shard/events";
import type { ScopedConversationId } from "./access";
import { pageQuery } from "./queries";
import { validate } from "./validation";

export const turnsQuery = pageQuery.extend({
  /** Comma-separated agent ids whose delivered replies count as history; omitted: every agent. */
  agents: z
    .string()
    .max(2_000)
    .transform((list) => list.split(",").filter((id) => id !== ""))
    .pipe(z.array(agentIdSchema).max(64))
    .optional(),
  sensitive: z.enum(["include", "exclude"]).default("exclude"),
});

/** `{ after?, limit?, agents?, sensitive? }`: a page of turns as the given agents' history shows them. */
export async function listTurns(db: D1Database, conversationId: ScopedConversationId, query: unknown): Promise<Result<Wire<typeof turnPageSchema>>> {
  const parsed = validate(turnsQuery, query);
  if (!parsed.ok) return parsed;
  const { after, limit, agents, sensitive } = parsed.value;
  // A page holds whole groups: it may exceed `limit` to finish the group it stopped in.
  const policy = { admittedAgents: agents === undefined ? ("all" as const) : new Set(agents), includeSensitive: sensitive === "include" };
  return ok(await readTurnsPage(db, conversationId, policy, after, limit));
}

/** Events read per step of a page: a page of turns usually needs one. */
const CHUNK = 1_000;

/**
 * A page of the canonical reconstruction: whole groups after `after`, at least `limit` turns when
 * that many follow. Reads the log forward from `after` a chunk at a time, with the related events
 * of each chunk through indexes, until `core/turn-pages` can decide the page — so a page costs
 * what its groups span, not the conversation's whole history.
 */
export async function readTurnsPage(
  db: D1Database,
  conversationId: string,
  policy: ReconstructionPolicy,
  after: number,
  limit: number,
  chunk = CHUNK,
): Promise<{ turns: Turn[]; nextAfter: number | null }> {
  const window: StoredEvent[] = [];
  const related = new Map<number, StoredEvent>();
  const named = { messageIds: new Set<string>(), proposalIds: new Set<string>() };
  for (let cursor = after; ; ) {
    const batch = await listEvents(db, conversationId, cursor, chunk);
    window.push(...batch);
    cursor = batch.at(-1)?.seq ?? cursor;
    // Relations of ids named by earlier chunks were read with them, wherever they lie in the log.
    const ids = idsNamedBy(batch);
    const messageIds = ids.messageIds.filter((id) => !named.messageIds.has(id));
    const proposalIds = ids.proposalIds.filter((id) => !named.proposalIds.has(id));
    for (const id of messageIds) named.messageIds.add(id);
    for (const id of proposalIds) named.proposalIds.add(id);
    if (messageIds.length > 0 || proposalIds.length > 0) {
      for (const event of await readRelatedEvents(db, conversationId, messageIds, proposalIds, { replies: true })) related.set(event.seq, event);
    }
    const page = pageOfTurns({ window, exhausted: batch.length < chunk, related: [...related.values()], policy, after, limit });
    if (page.complete) return { turns: page.turns, nextAfter: page.nextAfter } satisfies Wire<typeof turnPageSchema>;
  }
}
