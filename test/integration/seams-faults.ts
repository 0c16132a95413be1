import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { conversationStub } from "../../src/durable/stub";
import type { D1Call } from "../../bench/worker/d1-intercept";
import { interceptD1 } from "../../bench/worker/d1-intercept";

/**
 * Faults at the binding edge for the seams tests: a conversation's object is handed an env whose
 * D1 databases fail where a test says, and the code under test runs unchanged over it.
 */

/** The platform's wording for a D1 call that lost its connection (D1's list of retryable errors). */
export const CONNECTION_LOST = "D1_ERROR: Network connection lost.";

export type { D1Call };

/**
 * What happens to a call: `before`, it is refused before D1 sees it; `after`, D1 commits it and the
 * answer is lost; undefined, it passes. `error` is what the failed call rejects with.
 */
export type Verdict = { readonly when: "before" | "after"; readonly error: () => unknown } | undefined;

/** `db` with every call judged by `judge`. */
export function faultyD1(db: D1Database, judge: (call: D1Call) => Verdict): D1Database {
  return interceptD1(db, async (call, run) => {
    const verdict = judge(call);
    if (verdict === undefined) return run();
    if (verdict.when === "after") await run();
    throw verdict.error();
  });
}

/** A rule that fails the first `times` calls `matches` accepts, `when` it says, then lets every call pass. */
export function failFirst(matches: (call: D1Call) => boolean, options: { times?: number; when?: "before" | "after"; error?: () => unknown } = {}) {
  let left = options.times ?? 1;
  const rule = (call: D1Call): Verdict => {
    if (left <= 0 || !matches(call)) return undefined;
    left -= 1;
    rule.fired += 1;
    return { when: options.when ?? "before", error: options.error ?? (() => new Error(CONNECTION_LOST)) };
  };
  rule.fired = 0;
  return rule;
}

/** Whether any statement of a call mentions `text` (a table, a statement's start). */
export const mentions = (call: D1Call, text: string): boolean => call.sql.some((sql) => sql.includes(text));

/**
 * Gives the conversation's object the env `change` makes of its own, before anything reaches it (its
 * constructor has run, nothing has bound it). Returns a function that gives it back its own env.
 */
export async function changeObjectEnv(conversationId: string, change: (objectEnv: Env) => Env): Promise<() => Promise<void>> {
  let original: Env | undefined;
  await runInDurableObject(conversationStub(env, conversationId), (instance) => {
    const object = instance as unknown as { env: Env };
    original = object.env;
    object.env = change(object.env);
  });
  return async () => {
    await runInDurableObject(conversationStub(env, conversationId), (instance) => {
      if (original !== undefined) (instance as unknown as { env: Env }).env = original;
    });
  };
}

/** The placement rows of a conversation in the control database. */
export async function placementRows(conversationId: string): Promise<{ shard: string }[]> {
  const { results } = await env.DB.prepare("SELECT shard FROM conversation_placements WHERE conversation_id = ?").bind(conversationId).all<{ shard: string }>();
  return results;
}
