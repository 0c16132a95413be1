import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readTurnsPage } from "../../src/api/turns";
import type { EventInput } from "../../src/core/events";
import type { ReconstructionPolicy, Turn } from "../../src/core/reconstruction";
import { reconstruct } from "../../src/core/reconstruction";
import { readAllEvents } from "../../src/storage/shard/events";
import { inputArbOver, policyArb } from "../core/log-arbitraries";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, json, tokenFor } from "./helpers";

/**
 * `GET …/turns` reads a page from the log's range after its cursor plus indexed lookups, never the
 * whole log. Every page must be exactly the page the whole-log fold gives: arbitrary logs (ids
 * collide often: reused message ids, edits before their message, replies before their message or
 * to none, duplicate proposal ids, deliveries before their proposal), every policy, small limits,
 * and chunks as small as one event so the reader's stopping rule is exercised.
 */

interface Page {
  readonly turns: Turn[];
  readonly nextAfter: number | null;
}

/** The page as the whole-log fold gives it (what the route computed before it read by range). */
function foldedPage(all: Turn[], after: number, limit: number): Page {
  const turns = all.filter((turn) => turn.group > after);
  let end = Math.min(limit, turns.length);
  while (end < turns.length && turns[end]?.group === turns[end - 1]?.group) end += 1;
  const page = turns.slice(0, end);
  const last = page.at(-1);
  return { turns: page, nextAfter: end < turns.length && last !== undefined ? last.group : null };
}

/** Appends inputs through the API (run events are Foldline's own, so the generator's are left out). */
async function appendAll(token: string, conversation: string, inputs: readonly EventInput[]): Promise<void> {
  const events = inputs.filter((input) => input.kind !== "run").map((input, i) => ({ ...input, idempotencyKey: `k${i}` }));
  if (events.length === 0) return;
  const response = await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } });
  expect(response.status, await response.clone().text()).toBe(201);
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);
/** Many message ids, so logs have many groups and a page ends long before the log does. */
const logInputs = fc.array(inputArbOver(ids("m", 14), ids("p", 10)), { minLength: 0, maxLength: 80, size: "max" });

describe("pages of turns read by range", () => {
  it("equal the whole-log fold's pages, page after page, for arbitrary logs, policies, limits and chunk sizes", async () => {
    const token = await tokenFor("api:turns-prop:*");
    await fc.assert(
      fc.asyncProperty(logInputs, policyArb, fc.integer({ min: 1, max: 6 }), fc.constantFrom(1, 2, 3, 7, 1_000), async (inputs, policy: ReconstructionPolicy, limit, chunk) => {
        const conversation = freshConversation("api:turns-prop");
        await appendAll(token, conversation, inputs);
        const all = reconstruct(await readAllEvents(await shardOf(conversation), conversation), policy);
        let after = 0;
        for (let pages = 0; ; pages++) {
          expect(pages).toBeLessThanOrEqual(all.length + 1);
          const read = await readTurnsPage(await shardOf(conversation), conversation, policy, after, limit, chunk);
          const expected = foldedPage(all, after, limit);
          expect(read).toEqual(expected);
          if (read.nextAfter === null) break;
          after = read.nextAfter;
        }
      }),
      { numRuns: 60 },
    );
  });

  it("serves GET …/turns from the same reader", async () => {
    const conversation = freshConversation("api:turns-prop");
    const token = await tokenFor(conversation);
    const inputs: EventInput[] = [
      { kind: "source", idempotencyKey: "a", sensitive: false, body: { messageId: "m1", author: { id: "ada" }, text: "First." } },
      { kind: "proposal", idempotencyKey: "b", sensitive: false, body: { proposalId: "p1", agentId: "helper", replyToMessageId: "m2", text: "A reply before its message." } },
      { kind: "delivery", idempotencyKey: "c", sensitive: false, body: { status: "delivered", proposalId: "p1" } },
      { kind: "source", idempotencyKey: "d", sensitive: false, body: { messageId: "m2", author: { id: "ada" }, text: "Second." } },
      { kind: "correction", idempotencyKey: "e", sensitive: false, body: { action: "edit", targetMessageId: "m1", text: "First, edited." } },
    ];
    await appendAll(token, conversation, inputs);
    const first = await json<Page>(await call("GET", `/v1/conversations/${conversation}/turns?limit=1`, { token }));
    expect(first.turns.map((t) => t.text)).toEqual(["First, edited."]);
    expect(first.nextAfter).toBe(1);
    const second = await json<Page>(await call("GET", `/v1/conversations/${conversation}/turns?after=1&limit=1`, { token }));
    // The reply arrived before its message and still sits in its message's group, whole.
    expect(second.turns.map((t) => t.text)).toEqual(["Second.", "A reply before its message."]);
    expect(second.nextAfter).toBeNull();
  });
});
