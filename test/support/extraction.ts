import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { conversationStub } from "../../src/durable/stub";
import { call, eventsPath, json, sourceEvent } from "../integration/helpers";
import { settledChain, waitFor } from "./chain";
import { readChainBoundaries } from "./reads";
import { shardOf } from "./shards";
import type { MergedPage } from "../../src/storage/shard/extractions";
import { writeMergedVersions } from "../../src/storage/shard/extractions";

/**
 * Driving a conversation until memory extraction has read a given message: say it, fill the
 * window with messages that hold no durable fact until a settled boundary covers it, then wait for
 * the boundary's extraction run (on the conversation's shard).
 */

let filler = 0;
/** A message that holds no durable fact, to push older turns out of the tail. */
export async function fill(token: string, conversation: string): Promise<void> {
  const n = filler++;
  const text = `Filler chat line ${n} about nothing in particular, just some words to fill the window with ordinary talk and more ordinary talk.`;
  const response = await call("POST", eventsPath(conversation), { token, body: sourceEvent(`fill-${n}-${crypto.randomUUID()}`, `fill${n}`, text) });
  expect(response.status).toBe(201);
}

/** Posts one user message; returns its sequence. */
export async function say(token: string, conversation: string, messageId: string, text: string): Promise<number> {
  const response = await call("POST", eventsPath(conversation), { token, body: sourceEvent(`say-${messageId}`, messageId, text) });
  expect(response.status).toBe(201);
  return (await json<{ event: { seq: number } }>(response)).event.seq;
}

/** Fills until a settled boundary covers `seq`; returns the chain then. */
export async function fillUntilCovered(token: string, conversation: string, agentId: string, seq: number) {
  for (let i = 0; i < 60; i++) {
    const state = await conversationStub(env, conversation).describeChain(conversation, agentId);
    if (state !== undefined && state.openRunId !== null) {
      // A compaction is in flight: wait for it to settle before deciding whether to say more.
      const { chain } = await settledChain(conversation, agentId, 1);
      if ((chain.at(-1)?.body.coveredThrough.seq ?? 0) >= seq) return chain;
    }
    const chain = await readChainBoundaries(await shardOf(conversation), conversation, agentId, state?.epochId);
    if ((chain.at(-1)?.body.coveredThrough.seq ?? 0) >= seq) return chain;
    await fill(token, conversation);
  }
  throw new Error(`no boundary covered seq ${seq}`);
}

export interface ExtractionRun {
  run_id: string;
  boundary_id: string;
  provider: string;
  facts: number;
  versions_written: number;
}

export async function extractionRuns(conversation: string): Promise<ExtractionRun[]> {
  const { results } = await (await shardOf(conversation))
    .prepare("SELECT run_id, boundary_id, provider, facts, versions_written FROM extraction_runs WHERE conversation_id = ? ORDER BY created_at")
    .bind(conversation)
    .all<ExtractionRun>();
  return results;
}

export const extractedBoundary = (conversation: string, boundaryId: string) =>
  waitFor(async () => (await extractionRuns(conversation)).find((r) => r.boundary_id === boundaryId), `extraction of ${boundaryId}`);

/** The first boundary that covers `seq`, once its extraction has run. */
export async function extractedThrough(token: string, conversation: string, agentId: string, seq: number) {
  const covering = (await fillUntilCovered(token, conversation, agentId, seq)).find((b) => b.body.coveredThrough.seq >= seq);
  if (covering === undefined) throw new Error(`no boundary covers seq ${seq}`);
  return { boundary: covering, run: await extractedBoundary(conversation, covering.body.id) };
}

/** One page's merged version, as an extraction writes it (`writeMergedVersions` of one page): `conflict` when another writer moved its head. */
export async function writeMergedVersion(db: D1Database, page: MergedPage & { readonly conversationId: string; readonly agentId: string }, now: Date): Promise<"written" | "conflict"> {
  return (await writeMergedVersions(db, page.conversationId, page.agentId, [page], now)).has(page.path) ? "written" : "conflict";
}
