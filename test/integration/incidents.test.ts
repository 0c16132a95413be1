import { describe, expect, it } from "vitest";
import { opsText } from "../../src/core/ops-text";
import { closeIncidents, insertIncidentStatement, raiseIncident } from "../../src/storage/shard/incidents";
import { register } from "../support/declarations";
import { placedShardOf } from "../support/shards";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

interface Incident {
  id: number;
  agentId: string | null;
  runId: string | null;
  kind: string;
  code: string;
  message: string;
  createdAt: string;
  count: number;
  lastSeenAt: string;
  open: boolean;
}

interface IncidentPage {
  incidents: Incident[];
  nextAfter: number | null;
}

const incidentsPath = (conversation: string, query = "") => `/v1/conversations/${conversation}/incidents${query}`;

async function page(token: string, conversation: string, query = ""): Promise<IncidentPage> {
  const res = await call("GET", incidentsPath(conversation, query), { token });
  expect(res.status).toBe(200);
  return json<IncidentPage>(res);
}

/** Follows `nextAfter` to the end, returning every page. */
async function allPages(token: string, conversation: string, limit: number): Promise<IncidentPage[]> {
  const pages: IncidentPage[] = [];
  let after = 0;
  for (;;) {
    const next = await page(token, conversation, `?after=${after}&limit=${limit}`);
    pages.push(next);
    if (next.nextAfter === null) return pages;
    after = next.nextAfter;
  }
}

/** An incident row as the engine writes it, on the conversation's shard; the read API is what is under test here. */
async function recordIncident(conversation: string, code: string): Promise<void> {
  await insertIncidentStatement(await placedShardOf(conversation), {
    conversationId: conversation,
    agentId: "paging-agent",
    runId: null,
    kind: "compactor_failure",
    code,
    message: opsText`attempt 1: ${code}`,
    createdAt: new Date().toISOString(),
  }).run();
}

let counter = 0;

describe("GET /v1/conversations/{conversation}/incidents", () => {
  it("lists the incident of a plan that failed closed, with the run that failed", async () => {
    const conversation = freshConversation();
    const agentId = `inc-${Date.now().toString(36)}-${counter++}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
    expect((await page(token, conversation)).incidents).toEqual([]);

    for (let i = 0; i < 5; i++) {
      const res = await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, `Message ${i}: the offsite budget and the venue.`) });
      expect(res.status).toBe(201);
    }
    // The newest message alone is larger than the tail target (retain 800): the plan fails closed.
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("huge", "huge", "x".repeat(2_500)) })).status).toBe(201);

    const { events } = await json<{ events: { kind: string; body: { runId?: string; status?: string } }[] }>(
      await call("GET", `${eventsPath(conversation)}?limit=500`, { token }),
    );
    const failedRun = events.find((e) => e.kind === "run" && e.body.status === "failed");
    expect(failedRun?.body.runId).toBeDefined();

    const listed = await page(token, conversation);
    expect(listed.nextAfter).toBeNull();
    expect(listed.incidents).toHaveLength(1);
    const [incident] = listed.incidents;
    // A failed plan is an event: one incident, seen once, not open.
    expect(incident).toMatchObject({ agentId, runId: failedRun?.body.runId, kind: "plan_failure", code: "tail_group_too_large", count: 1, open: false });
    expect(incident?.lastSeenAt).toBe(incident?.createdAt);
    expect(Object.keys(incident ?? {}).sort()).toEqual(["agentId", "code", "count", "createdAt", "detail", "id", "kind", "lastSeenAt", "message", "open", "runId"]);
    expect(incident?.message.length).toBeGreaterThan(0);
    expect(Number.isNaN(Date.parse(incident?.createdAt ?? ""))).toBe(false);
    // Private evidence, never the conversation's content.
    expect(JSON.stringify(listed)).not.toContain("xxxxxxxxxx");
  });

  it("pages oldest first by id, and nextAfter is null exactly at the end", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    for (let i = 0; i < 5; i++) await recordIncident(conversation, `code_${i}`);

    const pages = await allPages(token, conversation, 2);
    expect(pages.map((p) => p.incidents.map((i) => i.code))).toEqual([["code_0", "code_1"], ["code_2", "code_3"], ["code_4"]]);
    const ids = pages.flatMap((p) => p.incidents.map((i) => i.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(pages.map((p) => p.nextAfter)).toEqual([ids[1], ids[3], null]);

    // A page that ends exactly at the last incident says so, rather than sending the reader to an empty page.
    const exact = await page(token, conversation, `?after=${ids[2]}&limit=2`);
    expect(exact).toEqual({ incidents: pages[1]?.incidents.slice(1).concat(pages[2]?.incidents ?? []), nextAfter: null });
    // Past the end: an empty page. A new incident lands behind the cursor the reader holds.
    expect(await page(token, conversation, `?after=${ids[4]}`)).toEqual({ incidents: [], nextAfter: null });
    await recordIncident(conversation, "code_5");
    expect((await page(token, conversation, `?after=${ids[4]}`)).incidents.map((i) => i.code)).toEqual(["code_5"]);
  });

  it("refuses a malformed cursor or limit with validation_failed", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    for (const query of ["?limit=0", "?limit=501", "?after=-1", "?after=abc", "?limit=1.5"]) {
      const res = await call("GET", incidentsPath(conversation, query), { token });
      expect(res.status).toBe(400);
      expect((await json<ErrorBody>(res)).error.code).toBe("validation_failed");
    }
  });

  it("shows a token only its own conversations' incidents", async () => {
    const mine = freshConversation("api:inc-a");
    const theirs = freshConversation("api:inc-b");
    // Interleaved, so a missing conversation filter would show up inside my pages.
    for (let i = 0; i < 3; i++) {
      await recordIncident(mine, `mine_${i}`);
      await recordIncident(theirs, `theirs_${i}`);
    }
    const myToken = await tokenFor(mine);
    const theirToken = await tokenFor("api:inc-b:*");

    const res = await call("GET", incidentsPath(theirs), { token: myToken });
    expect(res.status).toBe(403);
    const refused = await res.text();
    expect(refused).toContain("forbidden");
    expect(refused).not.toContain("theirs_");

    const myPages = await allPages(myToken, mine, 1);
    expect(myPages.flatMap((p) => p.incidents.map((i) => i.code))).toEqual(["mine_0", "mine_1", "mine_2"]);
    expect((await page(theirToken, theirs)).incidents.map((i) => i.code)).toEqual(["theirs_0", "theirs_1", "theirs_2"]);
    // A wildcard over another tenant's prefix is still not a key to mine.
    expect((await call("GET", incidentsPath(mine), { token: theirToken })).status).toBe(403);
    // No token at all is unauthorized, like every /v1 route.
    expect((await call("GET", incidentsPath(mine))).status).toBe(401);
  });
});

describe("an incident that repeats while open (migration 0017)", () => {
  const condition = (conversationId: string, createdAt: string) => ({
    conversationId,
    agentId: "repeat-agent",
    runId: null,
    kind: "resolver_failure" as const,
    code: "divergent_hash",
    message: opsText`packet_unreadable: the head's packet was altered`,
    createdAt,
  });

  it("is one row per (conversation, agent, kind, code) while open: a repeat counts on it, a second open row cannot be stored, and a closed one is left for the next", async () => {
    const conversation = freshConversation();
    const db = await placedShardOf(conversation);
    const token = await tokenFor(conversation);
    const first = await raiseIncident(db, condition(conversation, "2026-12-01T10:00:00.000Z"));
    expect(first).toMatchObject({ count: 1, notified: false });
    const again = await raiseIncident(db, { ...condition(conversation, "2026-12-01T10:05:00.000Z"), message: opsText`a later wording` });
    expect(again).toEqual({ ...first, count: 2 });
    // Another agent, or another code, is another incident.
    await raiseIncident(db, { ...condition(conversation, "2026-12-01T10:06:00.000Z"), code: "fork" });
    await raiseIncident(db, { ...condition(conversation, "2026-12-01T10:06:00.000Z"), agentId: "other-agent" });
    // The database itself refuses a second open row for the key, whoever writes it.
    await expect(
      db
        .prepare(
          `INSERT INTO incidents (conversation_id, agent_id, run_id, kind, code, message, created_at, count, last_seen_at, open)
           VALUES (?, 'repeat-agent', NULL, 'resolver_failure', 'divergent_hash', 'forged', ?, 1, ?, 1)`,
        )
        .bind(conversation, "2026-12-01T10:07:00.000Z", "2026-12-01T10:07:00.000Z")
        .run(),
    ).rejects.toThrow(/UNIQUE/);

    const [row] = (await page(token, conversation)).incidents;
    expect(row).toMatchObject({ id: first.id, count: 2, open: true, createdAt: "2026-12-01T10:00:00.000Z", lastSeenAt: "2026-12-01T10:05:00.000Z", message: "packet_unreadable: the head's packet was altered" });

    // Closed (what it concerns works again): kept with its count; the next occurrence is a new incident.
    expect(await closeIncidents(db, conversation, "repeat-agent", "resolver_failure")).toBe(2);
    const reopened = await raiseIncident(db, condition(conversation, "2026-12-01T11:00:00.000Z"));
    expect(reopened.id).toBeGreaterThan(first.id);
    expect(reopened.count).toBe(1);
    const listed = (await page(token, conversation)).incidents;
    expect(listed.map((i) => [i.agentId, i.code, i.count, i.open])).toEqual([
      ["repeat-agent", "divergent_hash", 2, false],
      ["repeat-agent", "fork", 1, false],
      ["other-agent", "divergent_hash", 1, true],
      ["repeat-agent", "divergent_hash", 1, true],
    ]);
  });

  it("stores an event as its own closed row, however often the same code recurs", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    await recordIncident(conversation, "model_timeout");
    await recordIncident(conversation, "model_timeout");
    expect((await page(token, conversation)).incidents.map((i) => [i.code, i.count, i.open])).toEqual([
      ["model_timeout", 1, false],
      ["model_timeout", 1, false],
    ]);
  });
});
