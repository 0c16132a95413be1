import { closedShards, pickShard, ShardConfigurationError, shardNames } from "../core/placement";

export { ShardConfigurationError } from "../core/placement";

/**
 * Where a conversation's data lives. A deployment binds one control database (`DB`: tokens,
 * sessions, declarations, the documents index, memory pages, placements) and N shard databases
 * (`DB_SHARD_0`, `DB_SHARD_1`, …) that hold everything keyed by a conversation. A conversation is
 * placed on a shard the first time something writes to it, and the placement is a row of the
 * control database that never changes (migrations/control/0015), so adding a shard moves nothing:
 * new conversations spread over the open shards by a stable hash of their id, old ones stay where
 * their row says.
 *
 * A placement never changes, so each isolate keeps the ones it has read (bounded); a conversation's
 * object also keeps its own in its storage, so after the first write a request for a conversation
 * reads no placement at all.
 */

/** A shard: its binding's name (what a placement row records) and the database. */
export interface Shard {
  readonly name: string;
  readonly db: D1Database;
}

/** The shards of each env object seen: its bindings never change, so they are listed once. */
const listed = new WeakMap<Env, Shard[]>();

/** Every `DB_SHARD_<n>` binding of `env`, in shard-number order. */
export function shardsOf(env: Env): Shard[] {
  const known = listed.get(env);
  if (known !== undefined) return known;
  const bound = env as unknown as Record<string, unknown>;
  const shards = shardNames(Object.keys(bound)).map((name) => ({ name, db: bound[name] as D1Database }));
  listed.set(env, shards);
  return shards;
}

/** The shards that take new conversations: every bound shard not named in `SHARDS_CLOSED`. */
export function openShards(env: Env): Shard[] {
  const setting: string = env.SHARDS_CLOSED;
  const closed = closedShards(setting);
  return shardsOf(env).filter((shard) => !closed.has(shard.name));
}

/** The shard a conversation not yet placed goes to (`core/placement`): a stable hash of its id over the open shards. */
export function chooseShard(conversationId: string, open: readonly Shard[]): Shard {
  const name = pickShard(conversationId, open.map((shard) => shard.name));
  const shard = open.find((s) => s.name === name);
  if (shard === undefined) throw new ShardConfigurationError("no open shard: bind DB_SHARD_0 (and more) and leave at least one out of SHARDS_CLOSED", { reason: "no_open_shard" });
  return shard;
}

/** Every shard binding by name. */
export function shardMap(env: Env): Map<string, D1Database> {
  return new Map(shardsOf(env).map((shard) => [shard.name, shard.db]));
}

/** Placements read or written by this isolate: they never change, so they never go stale. */
const PLACEMENTS_HELD = 20_000;
const held = new Map<string, string>();

function hold(conversationId: string, shard: string): void {
  held.set(conversationId, shard);
  if (held.size <= PLACEMENTS_HELD) return;
  const oldest = held.keys().next();
  if (oldest.done !== true) held.delete(oldest.value);
}

/** Forgets every placement this isolate holds (tests that add a shard to a running Worker). @internal */
export function forgetPlacements(): void {
  held.clear();
}

/** A placement this process learned elsewhere (a conversation's object keeps its own): held like one read here. */
export function heldPlacement(env: Env, conversationId: string, name: string): Shard {
  const shard = shardNamed(env, conversationId, name);
  hold(conversationId, name);
  return shard;
}

/** The shard a placement row names, or a typed failure when this Worker does not bind it. */
export function shardNamed(env: Env, conversationId: string, name: string): Shard {
  const shard = shardsOf(env).find((s) => s.name === name);
  if (shard === undefined) throw new ShardConfigurationError(`conversation ${JSON.stringify(conversationId)} lives on ${name}, which this Worker does not bind`, { reason: "shard_unbound", shard: name });
  return shard;
}

/** The shard recorded for a conversation, or undefined if nothing has placed it yet. */
export async function findPlacement(env: Env, conversationId: string): Promise<string | undefined> {
  const cached = held.get(conversationId);
  if (cached !== undefined) return cached;
  const row = await env.DB.prepare("SELECT shard FROM conversation_placements WHERE conversation_id = ?").bind(conversationId).first<{ shard: string }>();
  if (row !== null) hold(conversationId, row.shard);
  return row?.shard;
}

/**
 * The shards that hold the conversation (its row in `conversations`, written with its first event):
 * a shard knows its conversations, so one whose placement row was lost (a restored control
 * database) is still found where it lives, whatever shards are open now.
 */
async function shardsHolding(env: Env, conversationId: string): Promise<Shard[]> {
  const holding = await Promise.all(
    shardsOf(env).map(async (shard) => ((await shard.db.prepare("SELECT 1 AS found FROM conversations WHERE id = ?").bind(conversationId).first()) === null ? [] : [shard])),
  );
  return holding.flat();
}

/** The one shard holding a conversation that has no placement row, undefined for a new conversation, a typed failure for one split across shards. */
async function unrecordedHome(env: Env, conversationId: string): Promise<Shard | undefined> {
  const holding = await shardsHolding(env, conversationId);
  if (holding.length > 1) {
    const names = holding.map((shard) => shard.name).join(", ");
    throw new ShardConfigurationError(`conversation ${JSON.stringify(conversationId)} has no placement and rows on ${names}`, { reason: "split", shard: names });
  }
  return holding[0];
}

/**
 * The shard a conversation lives on, placing it first if nothing has. The placement row and the
 * shards are read at once: a recorded row answers; a conversation some shard already holds (its
 * row was lost) is placed back there, open or closed; a new one goes to the open shards' choice.
 * The row is then inserted if absent and read back in one batch, so two isolates placing one
 * conversation at once agree on whichever row was written first. Only a conversation's first bind
 * in an object pays this: the object keeps its shard, and an isolate holds what it placed.
 */
export async function placeConversation(env: Env, conversationId: string, now = new Date()): Promise<Shard> {
  const cached = held.get(conversationId);
  if (cached !== undefined) return shardNamed(env, conversationId, cached);
  const [recorded, home] = await Promise.all([findPlacement(env, conversationId), unrecordedHome(env, conversationId)]);
  if (recorded !== undefined) return shardNamed(env, conversationId, recorded);
  const choice = home ?? chooseShard(conversationId, openShards(env));
  return shardNamed(env, conversationId, await recordPlacement(env, conversationId, choice.name, now));
}

/**
 * Inserts the placement row unless one exists and reads back the one that stands, in one batch, so
 * two writers placing one conversation at once agree on whichever row was written first.
 */
async function recordPlacement(env: Env, conversationId: string, name: string, now: Date): Promise<string> {
  const [, read] = await env.DB.batch<{ shard: string }>([
    env.DB.prepare("INSERT INTO conversation_placements (conversation_id, shard, placed_at) VALUES (?, ?, ?) ON CONFLICT (conversation_id) DO NOTHING").bind(conversationId, name, now.toISOString()),
    env.DB.prepare("SELECT shard FROM conversation_placements WHERE conversation_id = ?").bind(conversationId),
  ]);
  const placed = read?.results[0]?.shard;
  // The batch inserts the row unless one exists and then reads it: no row is a defect, not a configuration.
  if (placed === undefined) throw new Error(`placing conversation ${JSON.stringify(conversationId)} wrote no row`);
  hold(conversationId, placed);
  return placed;
}

/**
 * For a conversation's object that kept its shard in its own storage: the control database's row
 * says the same, written back if it was lost (a control database restored from before the
 * conversation began), at the object's first write after it wakes. One read when the row stands;
 * a row naming another shard is a configuration an operator must reconcile (`split`).
 */
export async function confirmPlacement(env: Env, conversationId: string, name: string, now = new Date()): Promise<void> {
  // The row itself, not what this isolate holds: the object's own shard was just held.
  const row = await env.DB.prepare("SELECT shard FROM conversation_placements WHERE conversation_id = ?").bind(conversationId).first<{ shard: string }>();
  const found = row?.shard ?? (await recordPlacement(env, conversationId, name, now));
  if (found === name) return;
  throw new ShardConfigurationError(`conversation ${JSON.stringify(conversationId)} is kept on ${name} by its object and placed on ${found} by the control database`, {
    reason: "split",
    shard: `${name}, ${found}`,
  });
}

/** Where a conversation is read from, and whether it was placed there (`readPlacement`). */
export interface ReadPlacement {
  readonly shard: Shard;
  readonly placed: boolean;
}

/**
 * The shard to read a conversation from. One with no placement row is read where a shard holds it
 * (its row was lost; the next write records it again), and a conversation nothing has placed, held
 * by no shard, where it would be placed (and found empty): a read never writes. With every shard
 * closed it would be placed nowhere; it is read from the bound shards' choice instead, since
 * nothing is there to find either way.
 */
export async function readPlacement(env: Env, conversationId: string): Promise<ReadPlacement> {
  const found = await findPlacement(env, conversationId);
  if (found !== undefined) return { shard: shardNamed(env, conversationId, found), placed: true };
  const home = await unrecordedHome(env, conversationId);
  if (home !== undefined) return { shard: home, placed: false };
  const open = openShards(env);
  return { shard: chooseShard(conversationId, open.length > 0 ? open : shardsOf(env)), placed: false };
}

/**
 * The shard database holding a conversation's rows: where its placement says, or for a
 * conversation not placed yet, where it would be placed (`readPlacement`; nothing is placed here,
 * only the conversation's object places). For every read from outside the object, and for the
 * writes made outside it too: incidents, extracted memory pages, the queue's run bookkeeping.
 */
export async function shardDatabaseOf(env: Env, conversationId: string): Promise<D1Database> {
  return (await readPlacement(env, conversationId)).shard.db;
}
