import type { EventInput, StoredEvent } from "../core/events";
import type { Wakeups } from "./wakeups";

/** Appends the engine's bookkeeping through the conversation's log (`event-log` `bookkeeping`); `together` commits in the same D1 transaction. */
export type Append = (events: readonly EventInput[], together?: readonly D1PreparedStatement[]) => Promise<StoredEvent[]>;

/** What every part of a conversation's compaction engine works through: its bindings, its log, its deadlines. */
export interface EngineDeps {
  /** The bindings; `env.DB` is the control database (declarations, memory pages). */
  readonly env: Env;
  /** The conversation's shard: its events and everything derived from them (storage/shards). */
  readonly shard: D1Database;
  readonly conversationId: string;
  readonly append: Append;
  readonly wakes: Wakeups;
}
