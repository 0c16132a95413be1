import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import type { ReadPlacement, Shard } from "../storage/shards";
import { confirmPlacement, heldPlacement, placeConversation, readPlacement } from "../storage/shards";

/** Why a call binds the object: a `write` places an unplaced conversation, a `read` never does. */
export type BindIntent = "read" | "write";

/**
 * Which conversation a conversation's object is for, and the shard it lives on. An object is
 * named after its conversation; a call for another conversation is a routing bug. A `write`
 * places a conversation nothing placed yet; a `read` never does: it reads the conversation where
 * it would be placed (and finds it empty), and the object stays unplaced until a write. Nothing is
 * assigned until the shard is known, so a bind that throws (the control database unreachable, a
 * shard not bound) leaves it as it was and the next call binds afresh. The conversation's name
 * and shard are kept in the object's storage once placed, so that an alarm knows whom it is for
 * and no later bind reads a placement.
 */
export class ObjectPlacement {
  #conversationId: string | undefined;
  #shard: Shard | undefined;
  /** Whether `#shard` is the conversation's placement, or only where a read found it unplaced. */
  #placed = false;
  #moves = 0;

  /** `deps.env` is read on each use: a test may put the object's bindings under a fault plan after it started. */
  constructor(private readonly deps: { readonly env: Env; readonly storage: DurableObjectStorage }) {}

  /** The bound conversation, if a call bound one yet. */
  get conversationId(): string | undefined {
    return this.#conversationId;
  }

  /**
   * How many times the bound shard changed (read where the conversation would have been placed,
   * then placed elsewhere): whatever was read before a change is about another shard.
   */
  get moves(): number {
    return this.#moves;
  }

  async bind(conversationId: string, intent: BindIntent): Promise<Result<void>> {
    if (this.#conversationId !== undefined && this.#conversationId !== conversationId) return fail("internal", "request routed to another conversation's object");
    if (this.#shard !== undefined && (this.#placed || intent === "read")) return ok(undefined);
    const located = await this.#locate(conversationId, intent);
    if (this.#shard !== undefined && this.#shard.name !== located.shard.name) this.#moves += 1;
    this.#conversationId = conversationId;
    this.#shard = located.shard;
    this.#placed = located.placed;
    return ok(undefined);
  }

  /** `bind` where a refusal is a routing bug the caller cannot answer: thrown. */
  async bindOrThrow(conversationId: string, intent: BindIntent): Promise<void> {
    const bound = await this.bind(conversationId, intent);
    if (!bound.ok) throw new Error(bound.error.message);
  }

  /** The bound conversation's shard database (every caller runs after a bind). */
  db(): D1Database {
    if (this.#shard === undefined) throw new Error("conversation object used before it was bound to its conversation");
    return this.#shard.db;
  }

  /**
   * The conversation's shard: the one recorded in the object's storage, or else its placement in
   * the control database, which is recorded there (made now, for a write, if the conversation was
   * never placed). A placement never changes, so after the first call no request reads it again.
   */
  async #locate(conversationId: string, intent: BindIntent): Promise<ReadPlacement> {
    const { env, storage } = this.deps;
    const recorded = await storage.get<string>("shard");
    if (recorded !== undefined) {
      const shard = heldPlacement(env, conversationId, recorded);
      // A write is where a lost placement row is written back (docs/OPERATIONS.md); a read never writes.
      if (intent !== "read") await confirmPlacement(env, conversationId, recorded);
      return { shard, placed: true };
    }
    const found = intent === "read" ? await readPlacement(env, conversationId) : { shard: await placeConversation(env, conversationId), placed: true };
    if (found.placed) await storage.put({ conversationId, shard: found.shard.name });
    return found;
  }
}
