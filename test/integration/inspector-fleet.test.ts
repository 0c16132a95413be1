import { env, exports } from "cloudflare:workers";
import type { OpsText } from "../../src/core/ops-text";
import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { FleetPage } from "../../src/http/inspector/views/fleet-page";
import { hourWindow } from "../../src/core/fleet-series";
import { insertIncidentStatement, raiseIncident } from "../../src/storage/shard/incidents";
import { placeConversation, shardsOf } from "../../src/storage/shards";
import { settledChain } from "../support/chain";
import { register } from "../support/declarations";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";
import { elements } from "../support/html-elements";

/**
 * The inspector's fleet page (`/inspector/fleet`): compaction lag and failures per hour as
 * server-drawn SVG, the open incidents and the busiest conversations of every shard, for an
 * operator's token only; and, on a conversation's page, its context size against the trigger.
 *
 * Every file of the workers project shares storage, and the others write at the current hour, so
 * the rows seeded here lie two to five hours back and the charts are checked hour by hour there.
 */

const ORIGIN = "http://foldline.test";
const BASE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'";
const HOUR_MS = 3_600_000;

const get = (path: string, token?: string): Promise<Response> =>
  exports.default.fetch(new Request(`${ORIGIN}${path}`, { redirect: "manual", headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }));

const pagePath = (conversation: string, query = ""): string => `/inspector/conversations/${encodeURIComponent(conversation)}${query}`;

/** A time `minutes` into the hour that began `hoursAgo` hours before the current one. */
function inHour(hoursAgo: number, minutes: number): string {
  return new Date(Math.floor(Date.now() / HOUR_MS) * HOUR_MS - hoursAgo * HOUR_MS + minutes * 60_000).toISOString();
}
const hourOf = (hoursAgo: number): string => inHour(hoursAgo, 0).slice(0, 13);

/** A fresh conversation placed on the shard `name`: ids are tried until the placement hash lands there. */
async function conversationOn(name: string): Promise<string> {
  for (let tries = 0; tries < 200; tries++) {
    const id = freshConversation("api:fleet");
    if ((await placeConversation(env, id)).name === name) return id;
  }
  throw new Error(`no conversation placed on ${name}`);
}

/** A settled boundary on `db` whose plan was made at `plannedAt` and which settled `lagMs` later: one chain of its own. */
async function settled(db: D1Database, plannedAt: string, lagMs: number): Promise<void> {
  const conversation = freshConversation("api:fleet-lag");
  const runId = `cmp_${crypto.randomUUID()}`;
  const epochId = `ep-${crypto.randomUUID()}`;
  await db.batch([
    db
      .prepare(
        `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
         VALUES (?1, ?2, 'fleet-agent', ?3, '', ?4, ?5, 1, 1, ?6)`,
      )
      .bind(runId, conversation, epochId, `packets/fleet/${runId}.json`, "0".repeat(64), plannedAt),
    db
      .prepare(
        `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
         VALUES (?1, ?2, 'fleet-agent', ?3, 1, '', NULL, 1, ?4, '{}', ?5, ?6)`,
      )
      .bind(`bnd_${crypto.randomUUID()}`, conversation, epochId, runId, "1".repeat(64), new Date(Date.parse(plannedAt) + lagMs).toISOString()),
  ]);
}

/** `count` sources, in batches the API accepts, each text carrying `marker`. */
async function appendMany(token: string, conversation: string, count: number, marker: string): Promise<void> {
  for (let start = 0; start < count; start += 100) {
    const events = Array.from({ length: Math.min(100, count - start) }, (_, i) => sourceEvent(`k${start + i}`, `m${start + i}`, `message ${start + i} about ${marker}`));
    expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } })).status).toBe(201);
  }
}

describe("/inspector/fleet", () => {
  it("draws lag and failures per hour from every shard, lists open incidents and the busiest conversations, and shows no message text", async () => {
    const marker = `fleet-marker-${crypto.randomUUID()}`;
    const [shard0, shard1] = shardsOf(env);
    if (shard0 === undefined || shard1 === undefined) throw new Error("two shards");

    // Lags spread over two shards, each far enough from the others (more than a bin, 19%) that
    // the median is exact: five hours back 2 s, 4 s and 60 s on one shard, 3 s on the other (the
    // lower median of four is 3 s); three hours back one of 1.5 s; none four hours back.
    for (const [db, minute, lagMs] of [
      [shard0.db, 5, 2_000],
      [shard0.db, 10, 4_000],
      [shard0.db, 15, 60_000],
      [shard1.db, 20, 3_000],
    ] as const) {
      await settled(db, inHour(5, minute), lagMs);
    }
    await settled(shard1.db, inHour(3, 30), 1_500);

    // The busiest: 250 events on one shard, 150 on the other, every text with the marker.
    const [busy, busier] = [await conversationOn(shard1.name), await conversationOn(shard0.name)];
    const writer = await tokenFor("api:fleet:*");
    await appendMany(writer, busier, 250, marker);
    await appendMany(writer, busy, 150, marker);

    // Failures: five hours back a failed run on one shard and a refused delivery on the other; two
    // hours back a chain the resolver refuses, seen twice and still open. Each message carries the marker.
    const agentId = `fleet-${crypto.randomUUID().slice(0, 8)}`;
    const incident = { agentId, runId: null, code: "chain_invalid", message: `about ${marker}` as OpsText, detail: `about ${marker}` };
    await insertIncidentStatement(shard0.db, { ...incident, conversationId: busier, kind: "compactor_failure", createdAt: inHour(5, 40) }).run();
    await insertIncidentStatement(shard1.db, { ...incident, conversationId: busy, kind: "delivery_failure", createdAt: inHour(5, 45) }).run();
    const refused = { ...incident, conversationId: busy, kind: "resolver_failure" as const };
    await raiseIncident(shard1.db, { ...refused, createdAt: inHour(2, 1) });
    await raiseIncident(shard1.db, { ...refused, createdAt: inHour(2, 7) });

    const res = await get("/inspector/fleet", await tokenFor("ops"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(BASE_CSP);
    const html = await res.text();
    expect(html).not.toContain(marker);
    expect(await elements(html, "script")).toEqual([]);
    expect((await elements(html, '[data-testid="window"]'))[0]?.["data-hours"]).toBe("24");

    // Lag: one bar (the median) and one dot (the slowest) for each seeded hour, none between.
    expect(await elements(html, 'svg[data-testid="lag-chart"]')).toHaveLength(1);
    const lagHours = new Map((await elements(html, '[data-testid="lag-hour"]')).map((g) => [g["data-hour"], g]));
    expect([lagHours.get(hourOf(5))?.["data-settled"], lagHours.get(hourOf(5))?.["data-p50-ms"], lagHours.get(hourOf(5))?.["data-max-ms"]]).toEqual(["4", "3000", "60000"]);
    expect([lagHours.get(hourOf(3))?.["data-settled"], lagHours.get(hourOf(3))?.["data-p50-ms"], lagHours.get(hourOf(3))?.["data-max-ms"]]).toEqual(["1", "1500", "1500"]);
    expect(lagHours.has(hourOf(4))).toBe(false);
    for (const hour of [hourOf(5), hourOf(3)]) {
      expect(await elements(html, `[data-testid="lag-hour"][data-hour="${hour}"] rect[data-series="p50"]`)).toHaveLength(1);
      expect(await elements(html, `[data-testid="lag-hour"][data-hour="${hour}"] circle[data-series="max"]`)).toHaveLength(1);
    }
    const [median3s] = await elements(html, `[data-testid="lag-hour"][data-hour="${hourOf(5)}"] rect`);
    const [median1s] = await elements(html, `[data-testid="lag-hour"][data-hour="${hourOf(3)}"] rect`);
    expect(Number(median3s?.["height"])).toBeGreaterThan(Number(median1s?.["height"]));

    // Failures: stacked by kind in the hour each was last seen.
    const failureHours = new Map((await elements(html, '[data-testid="failure-hour"]')).map((g) => [g["data-hour"], g["data-incidents"]]));
    expect(failureHours.get(hourOf(5))).toBe("2");
    expect(failureHours.get(hourOf(2))).toBe("1");
    expect(failureHours.has(hourOf(4))).toBe(false);
    const kinds = async (hour: string) => (await elements(html, `[data-testid="failure-hour"][data-hour="${hour}"] rect`)).map((r) => [r["data-kind"], r["data-incidents"]]);
    expect(await kinds(hourOf(5))).toEqual([
      ["compactor_failure", "1"],
      ["delivery_failure", "1"],
    ]);
    expect(await kinds(hourOf(2))).toEqual([["resolver_failure", "1"]]);

    // The open incident, once with its count, linking to its conversation's page for its agent.
    const open = (await elements(html, '[data-testid="open-incident"]')).filter((row) => row["data-conversation"] === busy);
    expect(open.map((row) => [row["data-kind"], row["data-count"]])).toEqual([["resolver_failure", "2"]]);
    const openLinks = await elements(html, `[data-testid="open-incident"][data-conversation="${busy}"] a`);
    expect(openLinks.map((a) => a["href"])).toEqual([pagePath(busy, `?agent=${agentId}`)]);
    expect((await elements(html, '[data-testid="open-incident"]')).some((row) => row["data-conversation"] === busier)).toBe(false);

    // The busiest: both, the busier first, each linking to its page.
    const busiest = (await elements(html, '[data-testid="busy-conversation"]')).map((row) => [row["data-conversation"], row["data-events"]]);
    expect(busiest.filter(([id]) => id === busy || id === busier)).toEqual([
      [busier, "250"],
      [busy, "150"],
    ]);
    const busyLinks = (await elements(html, '[data-testid="busy-conversation"] a')).map((a) => a["href"]);
    expect(busyLinks).toContain(pagePath(busier));
    expect(busyLinks).toContain(pagePath(busy));

    // A window of four hours leaves out what is five hours back.
    const shorter = await (await get("/inspector/fleet?hours=4", await tokenFor("*"))).text();
    const shorterLag = (await elements(shorter, '[data-testid="lag-hour"]')).map((g) => g["data-hour"]);
    expect(shorterLag).toContain(hourOf(3));
    expect(shorterLag).not.toContain(hourOf(5));
  });

  it("is only an operator's: a token without ops (or *) is refused with 403, a bad window with 400, no session sent to sign in", async () => {
    for (const scopes of [["api:*", "telegram:*"], ["agent:*"]]) {
      const refused = await get("/inspector/fleet", await tokenFor(...scopes));
      expect(refused.status).toBe(403);
      expect(refused.headers.get("content-security-policy")).toBe(BASE_CSP);
      expect((await elements(await refused.text(), '[data-testid="error"]')).map((e) => e["data-code"])).toEqual(["forbidden"]);
    }
    const ops = await tokenFor("ops");
    for (const hours of ["0", "169", "a day"]) {
      expect((await get(`/inspector/fleet?hours=${encodeURIComponent(hours)}`, ops)).status).toBe(400);
    }
    const none = await get("/inspector/fleet");
    expect(none.status).toBe(303);
    expect(none.headers.get("location")).toBe("/inspector/login");
    // The conversations list links to the page for an operator only.
    expect(await elements(await (await get("/inspector", ops)).text(), '[data-testid="fleet-link"]')).toHaveLength(1);
    expect(await elements(await (await get("/inspector", await tokenFor("api:*"))).text(), '[data-testid="fleet-link"]')).toHaveLength(0);
  });

  it("says so when the window holds nothing", async () => {
    const model = { window: hourWindow(new Date(), 24), shards: ["DB_SHARD_0"], lag: [], failures: [], openIncidents: [], moreOpen: false, busiest: [] };
    const html = String(await jsx(FleetPage, { model }).toString());
    expect(await elements(html, "svg")).toEqual([]);
    for (const empty of ["lag-empty", "failures-empty", "no-open-incidents", "no-busy-conversations"]) {
      expect(await elements(html, `[data-testid="${empty}"]`)).toHaveLength(1);
    }
  });
});

describe("/inspector/conversations/:conversation context size", () => {
  it("draws the active size at each preflight against the trigger, with the plans that compacted it", async () => {
    const conversation = freshConversation("api:fleet-size");
    const agentId = `fleet-size-${crypto.randomUUID().slice(0, 8)}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
    const before = await (await get(pagePath(conversation), token)).text();
    expect(await elements(before, '[data-testid="context-size-empty"]')).toHaveLength(1);

    for (let i = 0; i < 30; i++) {
      const text = `Message ${i}: room ${100 + i} in ${i % 2 === 0 ? "Lisbon" : "Porto"} is booked for guest ${i} at ${1000 + i * 10} euros a night.`;
      expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`s${i}`, `${i}`, text) })).status).toBe(201);
    }
    await settledChain(conversation, agentId, 1);

    const log = await json<{ events: { kind: string; body: { role?: string; agentId?: string; status?: string; detail?: { activeChars?: number } } }[] }>(
      await call("GET", `${eventsPath(conversation)}?after=0&limit=500`, { token }),
    );
    const preflights = log.events.filter(
      (e) => e.kind === "run" && e.body.role === "compactor" && e.body.agentId === `${agentId}.compactor` && (e.body.status === "skipped" || e.body.status === "planned") && e.body.detail?.activeChars !== undefined,
    );
    const html = await (await get(pagePath(conversation), token)).text();
    const [chart] = await elements(html, 'svg[data-testid="context-size-chart"]');
    expect(chart?.["data-samples"]).toBe(String(preflights.length));
    expect(chart?.["data-plans"]).toBe(String(preflights.filter((e) => e.body.status === "planned").length));
    expect(Number(chart?.["data-plans"])).toBeGreaterThanOrEqual(1);
    expect(await elements(html, 'svg[data-testid="context-size-chart"] polyline[data-series="active"]')).toHaveLength(1);
    expect(await elements(html, 'svg[data-testid="context-size-chart"] polyline[data-series="trigger"]')).toHaveLength(1);
    expect(await elements(html, 'svg[data-testid="context-size-chart"] circle[data-series="plan"]')).toHaveLength(Number(chart?.["data-plans"]));
  });
});
