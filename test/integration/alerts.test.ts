import { env } from "cloudflare:workers";
import type { OpsText } from "../../src/core/ops-text";
import { afterEach, beforeEach, describe, expect, inject, it, vi } from "vitest";
import { ALERTS_PER_WINDOW } from "../../src/core/alerts";
import { sha256Hex } from "../../src/core/hash";
import type { Incident } from "../../src/incidents";
import { raiseIncident, recordIncident } from "../../src/incidents";
import { closeIncidents } from "../../src/storage/shard/incidents";
import type { ReceivedAlert } from "../fake-alerts/server";
import { insertPlan, settledChain, waitFor } from "../support/chain";
import { register } from "../support/declarations";
import { readIncidents } from "../support/reads";
import { placedShardOf, shardOf } from "../support/shards";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * Alerts to the operator's webhook, end to end: incidents are raised through the Worker (a refused
 * chain) or recorded the way the engine records them, the real queue carries each alert to the real
 * consumer, and a loopback webhook (test/fake-alerts) keeps every request it got. Signatures are
 * checked here with an HMAC of the test's own, never with the code that made them.
 */

const origin = inject("fakeAlertsOrigin");
const secret = inject("fakeAlertsSecret");

const BODY_FIELDS = ["event", "deliveryId", "id", "conversationId", "agentId", "runId", "kind", "code", "createdAt", "count", "suppressed"];

interface AlertBody {
  event: string;
  deliveryId: string;
  id: number;
  conversationId: string;
  agentId: string | null;
  runId: string | null;
  kind: string;
  code: string;
  createdAt: string;
  count: number;
  suppressed: number;
}

const bodyOf = (alert: ReceivedAlert): AlertBody => JSON.parse(alert.raw) as AlertBody;

/** What the webhook received for `conversation`, oldest first. */
async function receivedFor(conversation: string): Promise<ReceivedAlert[]> {
  const all = (await (await fetch(`${origin}/__requests`)).json()) as ReceivedAlert[];
  return all.filter((alert) => bodyOf(alert).conversationId === conversation);
}

/** The alerts of `conversation` the webhook accepted, once there are at least `atLeast`. */
const accepted = (conversation: string, atLeast = 1) =>
  waitFor(async () => {
    const ok = (await receivedFor(conversation)).filter((alert) => alert.status === 200);
    return ok.length >= atLeast ? ok : undefined;
  }, `${atLeast} alert(s) for ${conversation}`);

async function hmacHex(key: string, raw: string): Promise<string> {
  const imported = await crypto.subtle.importKey("raw", new TextEncoder().encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", imported, new TextEncoder().encode(raw)));
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The Worker's env with a queue that also keeps every message sent through it, to count what was queued. */
function recordingEnv(sent: unknown[], overrides: Partial<Record<keyof Env, unknown>> = {}): Env {
  const queue = {
    send: (message: unknown, options?: QueueSendOptions) => {
      sent.push(message);
      return env.JOB_QUEUE.send(message, options);
    },
  };
  return { ...env, JOB_QUEUE: queue, ...overrides } as Env;
}

const alertJobs = (sent: readonly unknown[]) => sent.filter((message) => (message as { type?: unknown }).type === "alert");

const incident = (conversationId: string, overrides: Partial<Incident> = {}): Incident => ({
  conversationId,
  agentId: "alerting-agent",
  runId: null,
  kind: "delivery_failure",
  code: "forbidden",
  // Planted in both: whatever an incident says, an alert carries its codes and ids, not its words.
  message: `provider said: ${MARKER}` as OpsText,
  detail: `provider said: ${MARKER}`,
  createdAt: new Date().toISOString(),
  ...overrides,
});

/** Planted in incident messages and conversation text: no alert may carry it. */
const MARKER = `Wombat${crypto.randomUUID().replaceAll("-", "")}`;

let lines: string[] = [];
beforeEach(() => {
  lines = [];
  for (const method of ["log", "warn", "error"] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      lines.push(args.map(String).join(" "));
    });
  }
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** The `alert` log lines written so far in this test. */
const alertLines = () =>
  lines.flatMap((text) => {
    try {
      const line = JSON.parse(text) as Record<string, unknown>;
      return line["event"] === "alert" ? [line] : [];
    } catch {
      return [];
    }
  });

let counter = 0;

describe("alerts to the operator's webhook", () => {
  it("posts a chain refused on every context call once, signed over the exact body, with codes and ids only", async () => {
    const conversation = freshConversation();
    const agentId = `alert-${Date.now().toString(36)}-${counter++}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
    for (let i = 0; i < 20; i++) {
      const text = `Message ${i} ${MARKER}: the offsite budget is ${1000 + i * 10} euros per person, flights included, hotel near the river.`;
      expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, text) })).status).toBe(201);
    }
    const head = (await settledChain(conversation, agentId, 1)).chain.at(-1);
    if (head === undefined) throw new Error("no boundary settled");
    // A head whose hash is not what its successor says: every context call refuses the chain.
    const runId = `cmp_${crypto.randomUUID()}`;
    const forgedId = `bnd_forged_${runId.slice(4, 12)}`;
    await insertPlan(conversation, agentId, head.epochId, runId, head.body.id, `${head.body.packet.key}.forged`, head.body.packet.hash);
    const forged = { ...head.body, id: forgedId, position: head.position + 1, run: { id: runId, triggerSeq: 1 }, coveredThrough: { turnId: "s999", seq: 999 } };
    await (await shardOf(conversation))
      .prepare(
        `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 999, ?, ?, ?, ?)`,
      )
      .bind(forgedId, conversation, agentId, head.epochId, head.position + 1, head.body.id, head.hash, runId, JSON.stringify(forged), sha256Hex("forged"), new Date().toISOString())
      .run();
    const refuse = async () => {
      const res = await call("GET", `/v1/conversations/${conversation}/context?agent=${agentId}`, { token });
      expect((await json<ErrorBody>(res)).error.code).toBe("chain_invalid");
    };

    await refuse();
    const [alert] = await accepted(conversation);
    if (alert === undefined) throw new Error("no alert");
    expect(alert.contentType).toBe("application/json");
    expect(alert.signature).toBe(`sha256=${await hmacHex(secret, alert.raw)}`);
    const body = bodyOf(alert);
    expect(Object.keys(body)).toEqual(BODY_FIELDS);
    const [row] = (await readIncidents(await shardOf(conversation), conversation, 10)).filter((i) => i.kind === "resolver_failure");
    expect(body).toMatchObject({ event: "incident", id: row?.id, conversationId: conversation, agentId, runId, kind: "resolver_failure", code: "divergent_hash", count: 1, suppressed: 0 });
    expect(body.deliveryId).toMatch(/^alr_[0-9a-f]{32}$/);
    // The incident's message (it names the failed check) and the conversation's text stay home.
    expect(row?.message.length).toBeGreaterThan(0);
    expect(alert.raw).not.toContain(row?.message);
    expect(alert.raw).not.toContain(MARKER);

    // The same refusal again is the open incident counted again: no second alert. An event recorded
    // after it is alerted; by the time its alert arrives, a second one for the refusal was never queued.
    await refuse();
    await recordIncident(env, incident(conversation));
    const after = await accepted(conversation, 2);
    expect(after.map((a) => bodyOf(a).kind)).toEqual(["resolver_failure", "delivery_failure"]);
    expect(after.map((a) => a.raw).join("\n")).not.toContain(MARKER);
  });

  it("queues one alert per new incident row: a repeat of an open incident queues none, a reopened one queues another", async () => {
    const conversation = freshConversation();
    await placedShardOf(conversation);
    const sent: unknown[] = [];
    const condition = incident(conversation, { kind: "wake_failure", code: "catch_up", agentId: null });
    const first = await raiseIncident(recordingEnv(sent), condition);
    expect(alertJobs(sent)).toHaveLength(1);
    const again = await raiseIncident(recordingEnv(sent), condition, 3);
    expect(again).toMatchObject({ id: first.id, count: 4 });
    expect(alertJobs(sent)).toHaveLength(1);

    const [alert] = await accepted(conversation);
    expect(alert === undefined ? undefined : bodyOf(alert)).toMatchObject({ id: first.id, agentId: null, runId: null, kind: "wake_failure", code: "catch_up", count: 1 });
    expect(await receivedFor(conversation)).toHaveLength(1);

    // Closed, then seen again: a new incident, and a new alert with a delivery id of its own.
    expect(await closeIncidents(await shardOf(conversation), conversation, null, "wake_failure")).toBe(1);
    const reopened = await raiseIncident(recordingEnv(sent), condition);
    expect(reopened.id).toBeGreaterThan(first.id);
    expect(alertJobs(sent)).toHaveLength(2);
    const both = await accepted(conversation, 2);
    expect(both.map((a) => bodyOf(a).id)).toEqual([first.id, reopened.id]);
    expect(new Set(both.map((a) => bodyOf(a).deliveryId)).size).toBe(2);
  });

  it("retries an alert the webhook answered 500, with the same body and signature, until it is accepted", async () => {
    const conversation = freshConversation();
    await placedShardOf(conversation);
    await fetch(`${origin}/__fail`, { method: "POST", body: JSON.stringify({ conversationId: conversation, times: 1 }) });
    await recordIncident(env, incident(conversation));
    await accepted(conversation);
    const attempts = await receivedFor(conversation);
    expect(attempts.map((a) => a.status)).toEqual([500, 200]);
    expect(attempts[1]?.raw).toBe(attempts[0]?.raw);
    expect(attempts[1]?.signature).toBe(`sha256=${await hmacHex(secret, attempts[0]?.raw ?? "")}`);
    await waitFor(async () => alertLines().find((line) => line["conversationId"] === conversation && line["outcome"] === "refused" && line["status"] === 500), "the refused attempt's line");
  });

  it("gives up after the queue's last retry, with a log line of ids and codes", async () => {
    const conversation = freshConversation();
    await placedShardOf(conversation);
    await fetch(`${origin}/__fail`, { method: "POST", body: JSON.stringify({ conversationId: conversation, times: 1_000 }) });
    await recordIncident(env, incident(conversation, { kind: "agent_failure", code: "model_timeout" }));
    const line = await waitFor(async () => alertLines().find((l) => l["conversationId"] === conversation && l["outcome"] === "given_up"), "the given-up line");
    expect(line).toMatchObject({ level: "error", kind: "agent_failure", agentId: "alerting-agent" });
    expect((await receivedFor(conversation)).every((a) => a.status === 500)).toBe(true);
    expect(lines.join("\n")).not.toContain(MARKER);
  });

  it("lets at most ALERTS_PER_WINDOW alerts of one kind out per window, and the next one out says how many were held back", async () => {
    // A window of its own, far from now, so no other incident of this file counts in it.
    const window = "2031-03-04T05:00:00.000Z";
    const storm = Array.from({ length: ALERTS_PER_WINDOW + 3 }, () => freshConversation("api:storm"));
    const sent: unknown[] = [];
    for (const [i, conversation] of storm.entries()) {
      await placedShardOf(conversation);
      await recordIncident(recordingEnv(sent), incident(conversation, { kind: "extraction_failure", code: "model_invalid_output", createdAt: new Date(Date.parse(window) + i * 1_000).toISOString() }));
    }
    expect(alertJobs(sent)).toHaveLength(ALERTS_PER_WINDOW);
    expect(alertLines().filter((line) => line["outcome"] === "suppressed")).toHaveLength(3);
    for (const conversation of storm.slice(0, ALERTS_PER_WINDOW)) await accepted(conversation);

    const later = freshConversation("api:storm");
    await placedShardOf(later);
    await recordIncident(recordingEnv(sent), incident(later, { kind: "extraction_failure", code: "model_invalid_output", createdAt: "2031-03-04T05:10:00.000Z" }));
    const [alert] = await accepted(later);
    expect(alert === undefined ? undefined : bodyOf(alert).suppressed).toBe(3);
    // Reported once: the next alert of the kind says nothing more was held back.
    const last = freshConversation("api:storm");
    await placedShardOf(last);
    await recordIncident(env, incident(last, { kind: "extraction_failure", code: "model_invalid_output", createdAt: "2031-03-04T05:20:00.000Z" }));
    const [next] = await accepted(last);
    expect(next === undefined ? undefined : bodyOf(next).suppressed).toBe(0);
    for (const conversation of storm.slice(ALERTS_PER_WINDOW)) expect(await receivedFor(conversation)).toEqual([]);
  });

  it("keeps the incident when its alert cannot be queued, and logs why", async () => {
    const conversation = freshConversation();
    const db = await placedShardOf(conversation);
    const failing = {
      send: () => Promise.reject(new TypeError("queue unavailable")),
    };
    await expect(recordIncident({ ...env, JOB_QUEUE: failing } as unknown as Env, incident(conversation))).resolves.toBeUndefined();
    expect((await readIncidents(db, conversation, 10)).map((i) => i.code)).toEqual(["forbidden"]);
    expect(alertLines()).toContainEqual(expect.objectContaining({ outcome: "not_queued", conversationId: conversation, code: "uncaught_typeerror" }));
  });

  it("turns alerts off on a URL that is neither https nor loopback, with one warning, and keeps every incident", async () => {
    const sent: unknown[] = [];
    const misconfigured = recordingEnv(sent, { OPS_ALERT_URL: `http://ops-${crypto.randomUUID()}.example.com/alerts` });
    const conversation = freshConversation();
    const db = await placedShardOf(conversation);
    await recordIncident(misconfigured, incident(conversation));
    await recordIncident(misconfigured, incident(conversation));
    expect(alertJobs(sent)).toEqual([]);
    expect((await readIncidents(db, conversation, 10))).toHaveLength(2);
    expect(alertLines().filter((line) => line["outcome"] === "disabled")).toEqual([expect.objectContaining({ level: "warn", code: "invalid_url" })]);
  });
});
