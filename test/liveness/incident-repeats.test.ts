import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { noticeJobSchema } from "../../src/core/jobs";
import { waitFor } from "../support/chain";
import { compactionJobFor, deliver } from "../support/queue";
import { shardOf } from "../support/shards";
import type { ErrorBody } from "../integration/helpers";
import { call, json } from "../integration/helpers";
import { sayUntilPlanned, setup } from "./harness";

/**
 * A condition that holds on every call is one incident while it is open (`src/incidents.ts`
 * `raiseIncident`): a chain the resolver refuses is refused, and recorded, on every context call, but
 * the operator is paged once and the row counts the rest. This runs in the liveness project because
 * only there is `OPERATOR_CHAT` set and every queued message recorded (vitest.config.ts), so the
 * notices the object queued can be counted.
 */

interface Incident {
  id: number;
  agentId: string | null;
  kind: string;
  code: string;
  count: number;
  createdAt: string;
  lastSeenAt: string;
  open: boolean;
}

async function incidents(token: string, conversation: string): Promise<Incident[]> {
  const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/incidents`, { token });
  expect(res.status).toBe(200);
  return (await json<{ incidents: Incident[] }>(res)).incidents;
}

async function contextStatus(token: string, conversation: string, agentId: string): Promise<{ status: number; reason: unknown }> {
  const res = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${agentId}`, { token });
  return { status: res.status, reason: res.status === 200 ? null : (await json<ErrorBody>(res)).error["reason"] };
}

/**
 * The operator notices about `conversation` that reached the queue before a marker sent now: the
 * marker is queued on the reply queue after every notice already sent, and the local queue delivers in order, so once
 * it arrived nothing sent before it is still on the way (an ordering, not a wait).
 */
async function noticesSoFar(conversation: string, kind: string): Promise<string[]> {
  const marker = { type: "test-marker", id: crypto.randomUUID() };
  await env.REPLY_QUEUE.send(marker);
  const sent = await waitFor(async () => {
    const all = await (await env.QUEUE_RECORDER.fetch("http://queue-recorder/")).json<unknown[]>();
    const at = all.findIndex((job) => (job as { id?: unknown }).id === marker.id);
    return at === -1 ? undefined : all.slice(0, at);
  }, "the queue marker");
  return sent.flatMap((job) => {
    const text = noticeJobSchema.safeParse(job).data?.text ?? "";
    return text.startsWith(`Foldline incident: ${kind} `) && text.includes(` in ${conversation}`) ? [text] : [];
  });
}

describe("an incident that repeats while open", () => {
  it("5 context calls on a forged chain: 1 incident counted 5 times, 1 notice; it closes when the chain verifies, and a new break is a new incident", async () => {
    const { conversation, agentId, token, stub } = await setup();
    const runId = await sayUntilPlanned(token, conversation, agentId);
    expect((await deliver("foldline-compaction", [await compactionJobFor(conversation, agentId, runId)])).explicitAcks).toEqual(["msg-0"]);
    expect((await stub.describeChain(conversation, agentId))?.headId).toBe(`bnd_${runId.replace(/^cmp_/, "")}`);
    expect((await contextStatus(token, conversation, agentId)).status).toBe(200);

    // The head's packet rewritten behind the service's back: the resolver refuses the chain.
    const row = await (await shardOf(conversation)).prepare("SELECT packet_key FROM compaction_plans WHERE run_id = ?").bind(runId).first<{ packet_key: string }>();
    const key = row?.packet_key ?? "";
    const original = (await (await env.DOCUMENTS.get(key))?.text()) ?? "";
    expect(original).toContain("Lisbon");
    await env.DOCUMENTS.put(key, original.replaceAll("Lisbon", "Madrid"));

    for (let i = 0; i < 5; i++) expect(await contextStatus(token, conversation, agentId)).toEqual({ status: 409, reason: "divergent_hash" });
    const [open, ...others] = await incidents(token, conversation);
    expect(others).toEqual([]);
    expect(open).toMatchObject({ agentId, kind: "resolver_failure", code: "divergent_hash", count: 5, open: true });
    expect(Date.parse(open?.lastSeenAt ?? "")).toBeGreaterThanOrEqual(Date.parse(open?.createdAt ?? ""));
    expect(await noticesSoFar(conversation, "resolver_failure")).toHaveLength(1);

    // Restored: served again, and the incident is closed with its count kept.
    await env.DOCUMENTS.put(key, original);
    expect((await contextStatus(token, conversation, agentId)).status).toBe(200);
    expect(await incidents(token, conversation)).toEqual([{ ...open, open: false }]);

    // Broken again: a new incident, and the operator is told again.
    await env.DOCUMENTS.put(key, original.replaceAll("Lisbon", "Porto"));
    for (let i = 0; i < 2; i++) expect((await contextStatus(token, conversation, agentId)).status).toBe(409);
    const listed = await incidents(token, conversation);
    expect(listed.map((i) => [i.id === open?.id, i.count, i.open])).toEqual([
      [true, 5, false],
      [false, 2, true],
    ]);
    expect(await noticesSoFar(conversation, "resolver_failure")).toHaveLength(2);
  }, 60_000);
});
