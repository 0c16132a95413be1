import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import type { IncidentRecord } from "../storage/shard/incidents";
import { readIncidentPage } from "../storage/shard/incidents";
import type { incidentPageSchema, Wire } from "./responses";
import { validate } from "./validation";
import type { ScopedConversationId } from "./access";
import { pageQuery } from "./queries";
import { shardDatabaseOf } from "../storage/shards";

/**
 * A conversation's incidents: the private evidence of failed compactor and agent runs, plans that
 * failed closed and chain heads the resolver refused. Incidents never reach a chat; this read is
 * how an operator (or a bot holding the conversation's scope) sees them. Their messages are the
 * same content-dark texts as the failed run events already in the conversation's log.
 */

export interface IncidentPage {
  readonly incidents: IncidentRecord[];
  /** The cursor of the next page, or null when this page reached the end. */
  readonly nextAfter: number | null;
}

/**
 * `{ after?, limit? }`: oldest first, paged by incident id (`after` is the last id read, 0 from the
 * start). Ascending like the event log, so a new incident lands on the last page and a reader
 * following `nextAfter` never skips one.
 */
export async function listIncidents(env: Env, conversationId: ScopedConversationId, query: unknown): Promise<Result<IncidentPage>> {
  const parsed = validate(pageQuery, query);
  if (!parsed.ok) return parsed;
  const { incidents, more } = await readIncidentPage(await shardDatabaseOf(env, conversationId), conversationId, parsed.value.after, parsed.value.limit);
  const last = incidents.at(-1);
  return ok({ incidents, nextAfter: more && last !== undefined ? last.id : null } satisfies Wire<typeof incidentPageSchema>);
}
