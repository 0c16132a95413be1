import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/core/hash";
import { mergeFacts } from "../../src/core/fact-merge";
import { writeMergedVersion } from "../support/extraction";
import { settledChain } from "../support/chain";
import { shardOf } from "../support/shards";
import { register } from "../support/declarations";
import { call, eventsPath, json, sourceEvent, tokenFor } from "./helpers";
import { elements } from "../support/html-elements";

const ORIGIN = "http://foldline.test";
const SAME_ORIGIN = { origin: ORIGIN, "sec-fetch-site": "same-origin" };
const BASE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'";

/** A request as a browser would send it; redirects are returned, not followed, so the test sees them. */
async function request(path: string, init: { method?: string; headers?: Record<string, string>; body?: string; origin?: string } = {}): Promise<Response> {
  return exports.default.fetch(
    new Request(`${init.origin ?? ORIGIN}${path}`, {
      method: init.method ?? "GET",
      redirect: "manual",
      headers: init.headers ?? {},
      ...(init.body === undefined ? {} : { body: init.body }),
    }),
  );
}

function postLogin(token: string, headers: Record<string, string> = SAME_ORIGIN, origin = ORIGIN): Promise<Response> {
  return request("/inspector/login", {
    method: "POST",
    origin,
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams({ token }).toString(),
  });
}

/** Signs in through the form and returns the `Cookie` header value the browser would send back. */
async function signIn(token: string): Promise<string> {
  const res = await postLogin(token);
  expect(res.status).toBe(303);
  const cookie = res.headers.get("set-cookie")?.split(";")[0];
  // A session id, never the token itself (inspector-sessions.test.ts).
  expect(cookie).toMatch(/^foldline_inspector=fls_[A-Za-z0-9_-]{43}$/);
  expect(cookie).not.toContain(token);
  return cookie ?? "";
}

const withCookie = (cookie: string) => ({ headers: { cookie } });

async function one(html: string, selector: string): Promise<Record<string, string>> {
  const [first, ...rest] = await elements(html, selector);
  expect(rest).toHaveLength(0);
  if (first === undefined) throw new Error(`no element matches ${selector}`);
  return first;
}

/** HTML attribute values keep `&` escaped; the links the page builds carry it in query strings. */
const unescapeHref = (href: string): string => href.replaceAll("&amp;", "&");

function expectSecurityHeaders(res: Response): void {
  expect(res.headers.get("content-security-policy")).toBe(BASE_CSP);
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  expect(res.headers.get("referrer-policy")).toBe("no-referrer");
  expect(res.headers.get("cache-control")).toBe("no-store");
}

let counter = 0;
const freshPrefix = (): string => `api:insp-${crypto.randomUUID()}`;
const freshAgent = (): string => `insp-${Date.now().toString(36)}-${counter++}`;

/**
 * Distinct facts (a room, a guest and a price each), enough of them for two compactions whatever
 * the first boundary keeps: the offline compactor folds restatements of one fact into its latest
 * value, so a thread of one fact restated would settle into a boundary too small to call for a second.
 */
const talk = (i: number): string =>
  `Message ${i}: room ${100 + i} in ${i % 2 === 0 ? "Lisbon" : "Porto"} is booked for guest ${i} at ${1000 + i * 10} euros a night.`;
const SCRIPT_TEXT = "<script>alert(1)</script> is what I typed";
const HOSTILE_NAME = `"><img src=x onerror=alert(2)>`;

/** A conversation whose agent has settled at least two boundaries; its newest message carries markup. */
async function settledConversation() {
  const prefix = freshPrefix();
  const conversation = `${prefix}:main`;
  const agentId = freshAgent();
  const token = await tokenFor(`${prefix}:*`, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, admitSensitive: true })).status).toBe(201);
  for (let i = 0; i < 50; i++) {
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, talk(i)) })).status).toBe(201);
  }
  const hostile = { kind: "source", idempotencyKey: "m-hostile", body: { messageId: "hostile", author: { id: "u2", name: HOSTILE_NAME }, text: SCRIPT_TEXT } };
  expect((await call("POST", eventsPath(conversation), { token, body: hostile })).status).toBe(201);
  const { chain } = await settledChain(conversation, agentId, 2);
  return { prefix, conversation, agentId, token, chain };
}

const pagePath = (conversation: string, query = ""): string => `/inspector/conversations/${encodeURIComponent(conversation)}${query}`;

/** Rows per page of the conversation page's long sections (timeline, runs, extracted facts). */
const PAGE = 20;

/**
 * Follows one section's "more" link from `path` until it has none: the rows `select` finds on each
 * page, keyed by `key`, and every page's HTML.
 */
async function walkPages(path: string, cookie: string, rows: string, key: (row: Record<string, string>) => string, more: string) {
  const pages: string[][] = [];
  const htmls: string[] = [];
  let next: string | undefined = path;
  while (next !== undefined && pages.length < 20) {
    const res = await request(next, withCookie(cookie));
    expect(res.status).toBe(200);
    const html = await res.text();
    htmls.push(html);
    pages.push((await elements(html, rows)).map(key));
    const link: string | undefined = (await elements(html, more))[0]?.["href"];
    next = link === undefined ? undefined : unescapeHref(link);
  }
  return { pages, htmls };
}

/** Writes `count` facts of the conversation for the agent, on pages of at most 13 keys, each from one of its messages. */
async function seedFacts(conversation: string, agentId: string, count: number): Promise<string[]> {
  const shard = await shardOf(conversation);
  const { results: sources } = await shard
    .prepare("SELECT seq, lower(hex(hash)) AS hash, json_extract(body, '$.messageId') AS message_id FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND kind = 'source' ORDER BY seq LIMIT ?")
    .bind(conversation, count)
    .all<{ seq: number; hash: string; message_id: string }>();
  expect(sources).toHaveLength(count);
  const written: string[] = [];
  for (let start = 0; start < count; start += 13) {
    const path = `extracted/places/paging-${start}`;
    const facts = sources.slice(start, start + 13).map((source, i) => ({
      page: path,
      key: `room-${String(start + i).padStart(2, "0")}`,
      statement: `Room <b>${start + i}</b> is booked`,
      sources: [{ messageId: source.message_id, seq: source.seq, eventHash: source.hash }],
    }));
    const { content } = mergeFacts(path, undefined, facts);
    const provenance = facts.map((f) => ({ factKey: f.key, messageId: f.sources[0]?.messageId ?? "", seq: f.sources[0]?.seq ?? 0, eventHash: f.sources[0]?.eventHash ?? "", runId: "run-paging" }));
    expect(await writeMergedVersion(shard, { conversationId: conversation, agentId, path, head: undefined, content, provenance }, new Date())).toBe("written");
    written.push(...facts.map((f) => `${path} ${f.key}`));
  }
  return written;
}

describe("/inspector sign-in", () => {
  it("signs in with a valid token: an HttpOnly, SameSite=Strict, Secure cookie on /inspector, then 303 to the list", async () => {
    const token = await tokenFor(`${freshPrefix()}:*`);
    const form = await request("/inspector/login");
    expect(form.status).toBe(200);
    const formHtml = await form.text();
    expect(await elements(formHtml, 'form#login input[name="token"]')).toHaveLength(1);
    // The fragment script runs only under this response's nonce; no other script is allowed.
    const csp = form.headers.get("content-security-policy") ?? "";
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'$/.exec(csp)?.[1];
    expect(csp).toBe(`${BASE_CSP}; script-src 'nonce-${nonce}'`);
    expect((await elements(formHtml, "script")).map((s) => s["nonce"])).toEqual([nonce]);
    expect((await request("/inspector/login")).headers.get("content-security-policy")).not.toBe(csp);

    const res = await postLogin(token);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/inspector");
    const setCookie = res.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(/^foldline_inspector=fls_[A-Za-z0-9_-]{43};/);
    expect(setCookie).not.toContain(token);
    expect(setCookie).toMatch(/; HttpOnly/);
    expect(setCookie).toMatch(/; SameSite=Strict/);
    expect(setCookie).toMatch(/; Path=\/inspector(;|$)/);
    // http://foldline.test is not the loopback: the cookie stays Secure, so no browser sends it in the clear.
    expect(setCookie).toMatch(/; Secure/);

    const list = await request("/inspector", withCookie(setCookie.split(";")[0] ?? ""));
    expect(list.status).toBe(200);
    expectSecurityHeaders(list);
    expect(await elements(await list.text(), "script")).toEqual([]);
  });

  it("drops Secure only for plain http on the loopback", async () => {
    const token = await tokenFor(`${freshPrefix()}:*`);
    const local = "http://127.0.0.1:8787";
    const res = await postLogin(token, { origin: local, "sec-fetch-site": "same-origin" }, local);
    expect(res.status).toBe(303);
    const setCookie = res.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(/^foldline_inspector=fls_[A-Za-z0-9_-]{43};/);
    expect(setCookie).not.toMatch(/Secure/);
  });

  it("refuses an invalid token with 401, a message and no cookie", async () => {
    for (const token of ["fl_not_a_real_token_at_all", "short", ""]) {
      const res = await postLogin(token);
      expect(res.status).toBe(401);
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(await elements(await res.text(), '[data-testid="login-error"]')).toHaveLength(1);
    }
  });

  it("signs out: the cookie is cleared and the browser sent to the login page", async () => {
    const cookie = await signIn(await tokenFor(`${freshPrefix()}:*`));
    const res = await request("/inspector/logout", { method: "POST", headers: { ...SAME_ORIGIN, cookie, "content-type": "application/x-www-form-urlencoded" }, body: "" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/inspector/login");
    expect(res.headers.get("set-cookie")).toMatch(/^foldline_inspector=; Max-Age=0; Path=\/inspector;/);
  });

  it("sends a request without a valid session to the login page, and accepts a bearer header instead", async () => {
    const prefix = freshPrefix();
    const token = await tokenFor(`${prefix}:*`);
    const paths = ["/inspector", pagePath(`${prefix}:a`), `${pagePath(`${prefix}:a`)}/boundaries/bnd_x.json`, `${pagePath(`${prefix}:a`)}/boundaries/bnd_x/packet.json`];
    for (const path of paths) {
      const none = await request(path);
      expect(none.status).toBe(303);
      expect(none.headers.get("location")).toBe("/inspector/login");
      expectSecurityHeaders(none);
      // A cookie that no longer authenticates is cleared on the way.
      const stale = await request(path, withCookie("foldline_inspector=fl_revoked_or_never_issued_token"));
      expect(stale.status).toBe(303);
      expect(stale.headers.get("set-cookie")).toMatch(/^foldline_inspector=; Max-Age=0/);
      const badBearer = await request(path, { headers: { authorization: "Bearer fl_revoked_or_never_issued_token" } });
      expect(badBearer.status).toBe(303);
    }
    const bearer = await request("/inspector", { headers: { authorization: `Bearer ${token}` } });
    expect(bearer.status).toBe(200);
  });

  it("refuses cross-site posts: no session is set or cleared", async () => {
    const token = await tokenFor(`${freshPrefix()}:*`);
    const cookie = await signIn(token);
    for (const headers of [{ origin: "https://evil.example", "sec-fetch-site": "cross-site" }, { origin: "null", "sec-fetch-site": "same-site" }, {}]) {
      const login = await postLogin(token, headers);
      expect(login.status).toBe(403);
      expect(login.headers.get("set-cookie")).toBeNull();
      expectSecurityHeaders(login);
      const logout = await request("/inspector/logout", {
        method: "POST",
        headers: { ...headers, cookie, "content-type": "application/x-www-form-urlencoded" },
        body: "",
      });
      expect(logout.status).toBe(403);
      expect(logout.headers.get("set-cookie")).toBeNull();
    }
    // What a browser sends from the inspector's own page under Referrer-Policy: no-referrer.
    expect((await postLogin(token, { origin: "null", "sec-fetch-site": "same-origin" })).status).toBe(303);
  });
});

describe("/inspector scopes", () => {
  it("answers 403 for a conversation outside the token's scopes, existing or not, and shows none of it", async () => {
    const theirs = `${freshPrefix()}:theirs`;
    const secret = `secret plans ${crypto.randomUUID()}`;
    const writer = await tokenFor(theirs);
    expect((await call("POST", eventsPath(theirs), { token: writer, body: sourceEvent("k1", "1", secret) })).status).toBe(201);
    const cookie = await signIn(await tokenFor(`${freshPrefix()}:mine`));

    const existing = await request(pagePath(theirs), withCookie(cookie));
    const missing = await request(pagePath(`${freshPrefix()}:nobody`), withCookie(cookie));
    expect(existing.status).toBe(403);
    expect(missing.status).toBe(403);
    expectSecurityHeaders(existing);
    const existingHtml = await existing.text();
    expect(existingHtml).not.toContain(secret);
    expect(existingHtml).not.toContain(theirs);
    expect(existingHtml).toBe(await missing.text());
    for (const suffix of ["/boundaries/bnd_x.json", "/boundaries/bnd_x/packet.json"]) {
      const res = await request(`${pagePath(theirs)}${suffix}`, withCookie(cookie));
      expect(res.status).toBe(403);
      expect(await res.text()).not.toContain(secret);
    }
  });

  it("lists only the conversations in the token's scopes that have events, paged by id", async () => {
    const tag = crypto.randomUUID();
    const [a, b, solo, sibling, other] = [`api:insp-${tag}:a`, `api:insp-${tag}:b`, `api:solo-${tag}`, `api:insp-${tag}x:c`, `api:other-${tag}`];
    const writer = await tokenFor("*");
    for (const [conversation, events] of [[a, 2], [b, 1], [solo, 1], [sibling, 1], [other, 1]] as const) {
      for (let i = 0; i < events; i++) {
        expect((await call("POST", eventsPath(conversation), { token: writer, body: sourceEvent(`k${i}`, `${i}`, `hello ${i}`) })).status).toBe(201);
      }
    }
    // A prefix scope, an exact scope, and an exact scope with no events.
    const reader = await tokenFor(`api:insp-${tag}:*`, solo, `api:empty-${tag}`);
    const auth = { headers: { authorization: `Bearer ${reader}` } };

    const res = await request("/inspector", auth);
    expect(res.status).toBe(200);
    const html = await res.text();
    const rows = await elements(html, '[data-testid="conversation"]');
    expect(rows.map((r) => r["data-conversation"])).toEqual([a, b, solo]);
    expect(html).not.toContain(sibling);
    expect(html).not.toContain(other);
    const cells = await elements(html, '[data-testid="conversation"] a');
    expect(cells.map((c) => c["href"])).toEqual([a, b, solo].map((id) => pagePath(id)));
    expect(html).toMatch(new RegExp(`${a}</code></a></td><td>2</td><td>2</td>`));

    const first = await (await request("/inspector?limit=2", auth)).text();
    expect((await elements(first, '[data-testid="conversation"]')).map((r) => r["data-conversation"])).toEqual([a, b]);
    const next = (await one(first, '[data-testid="next-page"]'))["href"] ?? "";
    const second = await (await request(unescapeHref(next), auth)).text();
    expect((await elements(second, '[data-testid="conversation"]')).map((r) => r["data-conversation"])).toEqual([solo]);
    expect(await elements(second, '[data-testid="next-page"]')).toEqual([]);
  });
});

describe("/inspector on a shard this Worker does not bind", () => {
  it("answers 503 unavailable, naming the shard, as the API does: the list and the conversation's page", async () => {
    const prefix = freshPrefix();
    const conversation = `${prefix}:on-unbound`;
    // Placed on a shard the configuration names but this Worker does not bind (a partial deploy).
    await env.DB.prepare("INSERT INTO conversation_placements (conversation_id, shard, placed_at) VALUES (?, 'DB_SHARD_9', ?)").bind(conversation, new Date().toISOString()).run();
    const auth = { headers: { authorization: `Bearer ${await tokenFor(`${prefix}:*`)}` } };
    const api = await call("GET", eventsPath(conversation), { token: await tokenFor(`${prefix}:*`) });
    expect(api.status).toBe(503);
    expect(await api.json()).toMatchObject({ error: { code: "unavailable", reason: "shard_unbound", shard: "DB_SHARD_9" } });
    for (const path of ["/inspector", pagePath(conversation)]) {
      const res = await request(path, auth);
      expect(res.status, path).toBe(503);
      expect(res.headers.get("retry-after"), path).toMatch(/^\d+$/);
      const html = await res.text();
      expect(html, path).toContain("unavailable");
      expect(html, path).toContain("DB_SHARD_9");
      expect(html, path).not.toContain("uncaught");
    }
  });
});

describe("/inspector/conversations/:conversation", () => {
  it("shows a settled chain: verdict and links, the bar against the policy, escaped history, raw JSON", async () => {
    const { prefix, conversation, agentId, token, chain } = await settledConversation();
    const cookie = await signIn(token);

    const res = await request(pagePath(conversation), withCookie(cookie));
    expect(res.status).toBe(200);
    expectSecurityHeaders(res);
    const html = await res.text();

    // The agent serving the conversation is chosen by default.
    expect((await elements(html, '[data-testid="agent"]')).map((a) => a["data-agent"])).toEqual([agentId]);

    // Chain verification: the same verdict as the API's audit, one row per link.
    const verdict = await one(html, '[data-testid="chain-verdict"]');
    expect(verdict["data-valid"]).toBe("true");
    expect(verdict["data-links"]).toBe(String(chain.length));
    const links = await elements(html, '[data-testid="chain-link"]');
    expect(links.map((l) => [l["data-boundary-id"], l["data-valid"]])).toEqual(chain.map((b) => [b.body.id, "true"]));

    // The bar: the API's context, segment by segment, against the compactor's policy.
    const context = await json<{ manifest: { totals: { chars: number }; boundary: { envelopeChars: number } | null } }>(
      await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${agentId}`, { token }),
    );
    const bar = await one(html, '[data-testid="context-bar"]');
    expect(bar["data-trigger"]).toBe("2000");
    expect(bar["data-retain"]).toBe("800");
    expect(bar["data-total"]).toBe(String(context.manifest.totals.chars));
    const segments = await elements(html, '[data-testid="context-bar"] [data-segment]');
    expect(segments.map((s) => s["data-segment"])).toEqual(["boundary", "amendment", "tail"]);
    const chars = segments.map((s) => Number(s["data-chars"]));
    expect(chars.reduce((n, c) => n + c, 0)).toBe(context.manifest.totals.chars);
    expect(chars[0]).toBe(context.manifest.boundary?.envelopeChars);
    expect(chars[0]).toBeGreaterThan(0);
    expect(chars[2]).toBeGreaterThan(0);
    const lines = await elements(html, '[data-testid="context-bar"] [data-line]');
    expect(lines.map((l) => [l["data-line"], l["data-chars"]])).toEqual([
      ["retain", "800"],
      ["trigger", "2000"],
    ]);

    // History is data: the markup a user typed is escaped text, and the page carries no script at all.
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt; is what I typed");
    expect(html).not.toContain("<script>alert(1)</script>");
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;");
    expect(await elements(html, "script")).toEqual([]);

    // Runs: the newest page of run events (newest first), counted per status as the log holds them.
    const log = await json<{ events: { seq: number; kind: string; body: { status?: string } }[] }>(await call("GET", `${eventsPath(conversation)}?after=0&limit=500`, { token }));
    const runEvents = log.events.filter((e) => e.kind === "run").reverse();
    const runs = await elements(html, '[data-testid="run"]');
    expect(runs.map((r) => [r["data-seq"], r["data-status"]])).toEqual(runEvents.slice(0, PAGE).map((e) => [String(e.seq), e.body.status]));
    const counts = await elements(html, '[data-testid="run-count"]');
    for (const count of counts) {
      expect(count["data-count"]).toBe(String(runEvents.filter((e) => e.body.status === count["data-status"]).length));
    }
    expect(Number(counts.find((c) => c["data-status"] === "completed")?.["data-count"])).toBeGreaterThanOrEqual(2);

    // Timeline: the newest page of events, newest first.
    const lastSeq = log.events.at(-1)?.seq ?? 0;
    const events = await elements(html, '[data-testid="event"]');
    expect(events.map((e) => Number(e["data-seq"]))).toEqual(Array.from({ length: Math.min(PAGE, lastSeq) }, (_, i) => lastSeq - i));

    // Boundaries, each with its raw JSON one click away.
    const listing = await json<{ boundaries: { id: string; hash: string }[] }>(
      await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/chain?agent=${agentId}`, { token }),
    );
    expect((await elements(html, '[data-testid="boundary"]')).map((b) => b["data-boundary-id"])).toEqual(listing.boundaries.map((b) => b.id));
    const head = listing.boundaries.at(-1);
    const headBoundary = chain.at(-1);
    if (head === undefined || headBoundary === undefined) throw new Error("expected a head boundary");
    const jsonLinks = await elements(html, '[data-testid="boundary-json"]');
    const packetLinks = await elements(html, '[data-testid="packet-json"]');
    expect(jsonLinks).toHaveLength(listing.boundaries.length);
    expect(packetLinks).toHaveLength(listing.boundaries.length);

    const raw = await request(jsonLinks.at(-1)?.["href"] ?? "", withCookie(cookie));
    expect(raw.status).toBe(200);
    expect(raw.headers.get("content-type")).toMatch(/^application\/json/);
    expect(raw.headers.get("content-disposition")).toBe("inline");
    expectSecurityHeaders(raw);
    const boundaryJson = await json<{ row: { id: string; hash: string; body: string; conversationId: string }; body: { id: string } }>(raw);
    expect(boundaryJson.row.id).toBe(head.id);
    expect(boundaryJson.row.hash).toBe(head.hash);
    expect(boundaryJson.row.conversationId).toBe(conversation);
    expect(sha256Hex(boundaryJson.row.body)).toBe(head.hash);
    expect(boundaryJson.body.id).toBe(head.id);

    const packet = await request(packetLinks.at(-1)?.["href"] ?? "", withCookie(cookie));
    expect(packet.status).toBe(200);
    expect(packet.headers.get("content-type")).toMatch(/^application\/json/);
    expect(packet.headers.get("content-disposition")).toBe("inline");
    const packetText = await packet.text();
    expect(sha256Hex(packetText)).toBe(headBoundary.body.packet.hash);
    expect((JSON.parse(packetText) as { conversationId: string }).conversationId).toBe(conversation);

    // A boundary belongs to its own conversation only: under another in-scope one it does not exist.
    const elsewhere = `${prefix}:other`;
    for (const path of [`${pagePath(elsewhere)}/boundaries/${head.id}.json`, `${pagePath(elsewhere)}/boundaries/${head.id}/packet.json`, `${pagePath(conversation)}/boundaries/bnd_missing.json`]) {
      const res404 = await request(path, withCookie(cookie));
      expect(res404.status).toBe(404);
      expect(await res404.text()).not.toContain(head.hash);
    }
  });

  it("pages the timeline, runs and facts by key (a page, then the rest, no repeat, no gap), with run durations and skip reasons", async () => {
    const { conversation, agentId, token } = await settledConversation();
    const seeded = await seedFacts(conversation, agentId, 26);
    const cookie = await signIn(token);
    const log = await json<{ events: { seq: number; kind: string; body: { status?: string; role?: string; detail?: { reason?: string } } }[] }>(
      await call("GET", `${eventsPath(conversation)}?after=0&limit=500`, { token }),
    );
    const start = pagePath(conversation, `?agent=${agentId}`);

    const timeline = await walkPages(start, cookie, '[data-testid="event"]', (e) => e["data-seq"] ?? "", '[data-testid="older-events"]');
    expect(timeline.pages[0]).toHaveLength(PAGE);
    expect(timeline.pages.length).toBeGreaterThan(2);
    expect(timeline.pages.flat()).toEqual(log.events.map((e) => String(e.seq)).reverse());

    const runEvents = log.events.filter((e) => e.kind === "run").reverse();
    const runs = await walkPages(start, cookie, '[data-testid="run"]', (r) => r["data-seq"] ?? "", '[data-testid="older-runs"]');
    expect(runs.pages[0]).toHaveLength(PAGE);
    expect(runs.pages.length).toBeGreaterThan(1);
    expect(runs.pages.flat()).toEqual(runEvents.map((e) => String(e.seq)));

    // A settled compaction shows how long it took from its plan; a preflight that did not plan, why.
    const durations = (await Promise.all(runs.htmls.map((html) => elements(html, '[data-testid="run-duration"][data-kind="settled"]')))).flat();
    const settled = runEvents.filter((e) => e.body.role === "compactor" && e.body.status === "completed");
    expect(settled.length).toBeGreaterThanOrEqual(2);
    expect(durations).toHaveLength(settled.length);
    for (const d of durations) expect(Number(d["data-ms"])).toBeGreaterThanOrEqual(0);
    const reasons = (await Promise.all(runs.htmls.map((html) => elements(html, '[data-testid="skip-reason"]')))).flat();
    const skipped = runEvents.filter((e) => e.body.status === "skipped");
    expect(skipped.length).toBeGreaterThan(0);
    expect(reasons.map((r) => r["data-reason"])).toEqual(skipped.map((e) => e.body.detail?.reason));
    expect(reasons.map((r) => r["data-reason"])).toContain("below_trigger");
    expect(timeline.htmls.join("")).toContain("· reason below_trigger");

    const facts = await walkPages(start, cookie, '[data-testid="extracted-fact"]', (f) => `${f["data-path"] ?? ""} ${f["data-key"] ?? ""}`, '[data-testid="more-facts"]');
    expect(facts.pages[0]).toHaveLength(PAGE);
    const all = facts.pages.flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all).toEqual([...all].sort());
    for (const fact of seeded) expect(all).toContain(fact);
    expect(facts.htmls.join("")).toContain("Room &lt;b&gt;3&lt;/b&gt; is booked");
    expect(facts.htmls.join("")).not.toContain("<b>3</b>");

    // A section's link keeps the other sections where they are.
    const secondFacts = (await elements(facts.htmls[0] ?? "", '[data-testid="more-facts"]'))[0]?.["href"] ?? "";
    const olderEvents = (await elements((await (await request(unescapeHref(secondFacts), withCookie(cookie))).text()), '[data-testid="older-events"]'))[0]?.["href"] ?? "";
    expect(new URL(unescapeHref(olderEvents), ORIGIN).searchParams.get("memory")).toBe(new URL(unescapeHref(secondFacts), ORIGIN).searchParams.get("memory"));

    // A malformed cursor is refused, not read.
    expect((await request(`${start}&memory=${encodeURIComponent("no cursor")}`, withCookie(cookie))).status).toBe(400);
  });

  it("shows a context that fails closed as its error code and reason, and the audit's failed checks", async () => {
    const { conversation, agentId, token, chain } = await settledConversation();
    const head = chain.at(-1);
    if (head === undefined) throw new Error("expected a head boundary");
    const original = await (await env.DOCUMENTS.get(head.body.packet.key))?.text();
    await env.DOCUMENTS.put(head.body.packet.key, (original ?? "").replace("Message", "Massage"));

    const res = await request(pagePath(conversation, `?agent=${agentId}`), { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(await elements(html, '[data-testid="context-bar"]')).toEqual([]);
    const failure = await one(html, '[data-testid="context-error"]');
    expect(failure["data-code"]).toBe("chain_invalid");
    expect(failure["data-reason"]).not.toBe("");
    expect((await one(html, '[data-testid="chain-verdict"]'))["data-valid"]).toBe("false");
    const links = await elements(html, '[data-testid="chain-link"]');
    expect(links.map((l) => l["data-valid"])).toEqual([...chain.slice(0, -1).map(() => "true"), "false"]);
    expect((await elements(html, '[data-testid="failed-check"]')).map((c) => c["data-check"])).toContain("packet_hash");

    // The tampered packet is not served as the boundary's packet.
    const packet = await request(`${pagePath(conversation)}/boundaries/${head.body.id}/packet.json`, { headers: { authorization: `Bearer ${token}` } });
    expect(packet.status).toBe(409);
    expect(await packet.text()).not.toContain("Massage");
  });
});
