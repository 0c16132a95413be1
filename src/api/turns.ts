import type { StoredEvent } from "../core/events";
import type { ReconstructionPolicy, Turn } from "../core/reconstruction";
import { idsNamedBy, pageOfTurns } from "../core/turn-pages";
import type { turnPageSchema, Wire } from "./responses";
import { readRelatedEvents } from "../storage/context-store";
import { listEvents } from "../storage/event-store";

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
