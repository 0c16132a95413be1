import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/core/hash";
import { memoryPathSchema } from "../../src/core/memory-path";
import { MAX_RECALL_TERMS } from "../../src/core/search-text";
import { deletePage, getPage, putPage, recallMatchExpression, recallPages } from "../../src/storage/control/memory-pages";
import { agentPageTerms, expectedTerms } from "../support/index-terms";
import { declareForStorage, pair } from "../support/declarations";
import type { ErrorBody } from "./helpers";
import { call, json, tokenFor } from "./helpers";

/** Storage is shared by the tests of this file, so each test writes under agents of its own. */
function freshAgent(prefix = "agent"): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

/** A fresh agent the memory store serves: declared before anything the test writes (`declareForStorage`). */
async function storedAgent(): Promise<string> {
  const agent = freshAgent();
  await declareForStorage(env.DB, agent);
  return agent;
}

/**
 * A declared agent (serving a tenant of its own) and a token that may change it: a person's pages
 * are written only for a declared agent, by a token holding its scope and its sources.
 */
async function declared(prefix = "agent"): Promise<{ agent: string; token: string }> {
  const agent = freshAgent(prefix);
  const token = await tokenFor(`agent:${agent}`, `api:mem-${agent}:*`);
  expect((await call("PUT", `/v1/agents/${agent}`, { token, body: pair({ agentId: agent, sources: [`api:mem-${agent}:*`] }) })).status).toBe(201);
  return { agent, token };
}

function pageUrl(agent: string, path?: string, query = ""): string {
  return `/v1/agents/${agent}/memory${path === undefined ? "" : `/${path}`}${query}`;
}

interface PutBody {
  path: string;
  version: number;
  contentHash: string;
  created: boolean;
}
interface PageBody {
  path: string;
  version: number;
  contentHash: string;
  chars: number;
  content: string;
  createdAt: string;
}
interface ListBody {
  pages: { path: string; version: number; contentHash: string; chars: number }[];
  nextAfter: string | null;
}

async function versionRows(agent: string, path: string): Promise<{ version: number; deleted: number; content_hash: string }[]> {
  const { results } = await env.DB.prepare(
    "SELECT version, deleted, content_hash FROM memory_page_versions WHERE agent_id = ? AND path = ? ORDER BY version",
  )
    .bind(agent, path)
    .all<{ version: number; deleted: number; content_hash: string }>();
  return results;
}

const NOW = new Date("2026-11-20T10:00:00Z");

describe("memory pages over HTTP", () => {
  it("writes versions, reads the current and older ones, and treats an identical put as a no-op", async () => {
    const { agent, token } = await declared();

    const first = await call("PUT", pageUrl(agent, "decisions/vendor.pkf"), { token, body: { content: "We chose vendor B." } });
    expect(first.status).toBe(201);
    expect(await json<PutBody>(first)).toEqual({
      path: "decisions/vendor.pkf",
      version: 1,
      contentHash: sha256Hex("We chose vendor B."),
      created: true,
    });

    const second = await call("PUT", pageUrl(agent, "decisions/vendor.pkf"), { token, body: { content: "We chose vendor B; @eng dissented." } });
    expect(second.status).toBe(201);
    expect((await json<PutBody>(second)).version).toBe(2);

    const again = await call("PUT", pageUrl(agent, "decisions/vendor.pkf"), { token, body: { content: "We chose vendor B; @eng dissented." } });
    expect(again.status).toBe(200);
    expect(await json<PutBody>(again)).toMatchObject({ version: 2, created: false });
    expect(await versionRows(agent, "decisions/vendor.pkf")).toHaveLength(2);

    const current = await json<PageBody>(await call("GET", pageUrl(agent, "decisions/vendor.pkf"), { token }));
    expect(current).toMatchObject({ version: 2, content: "We chose vendor B; @eng dissented.", chars: 34 });
    expect(current.contentHash).toBe(sha256Hex(current.content));

    const older = await call("GET", pageUrl(agent, "decisions/vendor.pkf", "?version=1"), { token });
    expect(older.status).toBe(200);
    expect(await json<PageBody>(older)).toMatchObject({ version: 1, content: "We chose vendor B." });

    const missing = await call("GET", pageUrl(agent, "decisions/vendor.pkf", "?version=3"), { token });
    expect(missing.status).toBe(404);
    expect((await json<ErrorBody>(missing)).error.code).toBe("not_found");
  });

  it("counts chars as JavaScript string length and round-trips non-ASCII content exactly", async () => {
    const { agent, token } = await declared();
    const content = "Café ☕ — 🧭 north star: ship by Friday";
    expect((await call("PUT", pageUrl(agent, "goals"), { token, body: { content } })).status).toBe(201);
    const page = await json<PageBody>(await call("GET", pageUrl(agent, "goals"), { token }));
    expect(page.content).toBe(content);
    expect(page.chars).toBe(content.length);
    expect(page.chars).toBeGreaterThan([...content].length);
  });

  it("deletes with a tombstone, keeps the history readable, and can write the page again", async () => {
    const { agent, token } = await declared();
    await call("PUT", pageUrl(agent, "people/ada"), { token, body: { content: "Ada prefers mornings." } });
    await call("PUT", pageUrl(agent, "people/ada"), { token, body: { content: "Ada prefers afternoons." } });

    expect((await call("DELETE", pageUrl(agent, "people/ada"), { token })).status).toBe(204);
    const gone = await call("GET", pageUrl(agent, "people/ada"), { token });
    expect(gone.status).toBe(404);
    expect((await json<ErrorBody>(gone)).error.code).toBe("not_found");
    // The tombstone itself is not a readable version.
    expect((await call("GET", pageUrl(agent, "people/ada", "?version=3"), { token })).status).toBe(404);
    expect(await json<PageBody>(await call("GET", pageUrl(agent, "people/ada", "?version=1"), { token }))).toMatchObject({
      content: "Ada prefers mornings.",
    });

    const second = await call("DELETE", pageUrl(agent, "people/ada"), { token });
    expect(second.status).toBe(404);
    expect((await json<ErrorBody>(second)).error.code).toBe("not_found");
    expect((await call("DELETE", pageUrl(agent, "people/nobody"), { token })).status).toBe(404);

    // Same content as version 2, but the page was deleted since: that is a new version.
    const revived = await call("PUT", pageUrl(agent, "people/ada"), { token, body: { content: "Ada prefers afternoons." } });
    expect(revived.status).toBe(201);
    expect((await json<PutBody>(revived)).version).toBe(4);
    expect((await versionRows(agent, "people/ada")).map((r) => [r.version, r.deleted])).toEqual([
      [1, 0],
      [2, 0],
      [3, 1],
      [4, 0],
    ]);
  });

  it("lists live pages in path order with their current versions, a page at a time", async () => {
    const { agent, token } = await declared();
    for (const [path, content] of [
      ["b/two", "two"],
      ["a/one", "one"],
      ["c/three", "three"],
      ["a/one", "one, revised"],
      ["d/gone", "soon deleted"],
    ] as const) {
      await call("PUT", pageUrl(agent, path), { token, body: { content } });
    }
    await call("DELETE", pageUrl(agent, "d/gone"), { token });

    const all = await json<ListBody>(await call("GET", pageUrl(agent), { token }));
    expect(all.pages).toEqual([
      { path: "a/one", version: 2, contentHash: sha256Hex("one, revised"), chars: 12 },
      { path: "b/two", version: 1, contentHash: sha256Hex("two"), chars: 3 },
      { path: "c/three", version: 1, contentHash: sha256Hex("three"), chars: 5 },
    ]);
    expect(all.nextAfter).toBeNull();

    const first = await json<ListBody>(await call("GET", pageUrl(agent, undefined, "?limit=2"), { token }));
    expect(first.pages.map((p) => p.path)).toEqual(["a/one", "b/two"]);
    expect(first.nextAfter).toBe("b/two");
    const rest = await json<ListBody>(await call("GET", pageUrl(agent, undefined, `?limit=2&after=${first.nextAfter}`), { token }));
    expect(rest.pages.map((p) => p.path)).toEqual(["c/three"]);

    // An id nobody declared has no pages to list, and says so as for an agent the caller may not act on.
    const otherAgent = freshAgent();
    expect((await call("GET", pageUrl(otherAgent), { token: await tokenFor(`agent:${otherAgent}`) })).status).toBe(404);
  });

  it.each([
    ["an empty segment", "notes//today"],
    ["a trailing slash", "notes/"],
    ["no path at all", ""],
    ["a path over 200 characters", `${"a".repeat(100)}/${"b".repeat(100)}`],
    ["a space", "my%20notes"],
    ["an encoded slash inside a segment", "notes%2Ftoday"],
    ["a non-ASCII letter", "caf%C3%A9"],
    ["malformed percent-encoding", "notes%E0%A4%A"],
  ])("refuses a page path with %s, and writes nothing", async (_, path) => {
    const { agent, token } = await declared();
    const res = await call("PUT", `/v1/agents/${agent}/memory/${path}`, { token, body: { content: "x" } });
    expect(res.status).toBe(400);
    const body = await json<ErrorBody>(res);
    expect(body.error.code).toBe("validation_failed");
    expect(body.error.message).toMatch(/^path: /);
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM memory_page_versions WHERE agent_id = ?").bind(agent).first<{ n: number }>();
    expect(rows?.n).toBe(0);
  });

  it("accepts a path of exactly 200 characters and percent-encoded unreserved characters", async () => {
    const { agent, token } = await declared();
    const longest = `${"a".repeat(99)}/${"b".repeat(100)}`;
    expect((await call("PUT", pageUrl(agent, longest), { token, body: { content: "long" } })).status).toBe(201);
    expect((await call("PUT", pageUrl(agent, "%6Eotes/x"), { token, body: { content: "encoded n" } })).status).toBe(201);
    expect((await json<PageBody>(await call("GET", pageUrl(agent, "notes/x"), { token }))).content).toBe("encoded n");
  });

  it("resolves dot segments before routing, so they cannot reach another agent's pages", async () => {
    const { agent: mine, token } = await declared();
    const { agent: theirs, token: theirToken } = await declared();
    expect((await call("PUT", pageUrl(theirs, "secret"), { token: theirToken, body: { content: "their secret" } })).status).toBe(201);

    for (const escape of [`../../${theirs}/memory/secret`, `%2E%2E/%2e%2e/${theirs}/memory/secret`]) {
      const res = await call("GET", `/v1/agents/${mine}/memory/${escape}`, { token });
      expect(res.status).toBe(403);
      expect(await res.text()).not.toContain("their secret");
    }
    // Inside the agent's own pages, `x/../y` is simply `y`.
    await call("PUT", pageUrl(mine, "x/../y"), { token, body: { content: "why" } });
    expect((await json<PageBody>(await call("GET", pageUrl(mine, "y"), { token }))).path).toBe("y");
  });

  it.each([
    ["a number", { content: 42 }],
    ["a missing field", {}],
    ["an extra field", { content: "x", version: 3 }],
    ["empty content", { content: "" }],
    ["content over 50,000 characters", { content: "x".repeat(50_001) }],
  ])("refuses a body with %s", async (_, body) => {
    const { agent, token } = await declared();
    const res = await call("PUT", pageUrl(agent, "notes"), { token, body });
    expect(res.status).toBe(400);
    expect((await json<ErrorBody>(res)).error.code).toBe("validation_failed");
    expect((await call("GET", pageUrl(agent, "notes"), { token })).status).toBe(404);
  });

  it("refuses content with a lone surrogate and bodies that are not JSON", async () => {
    const { agent, token } = await declared();
    const lone = await call("PUT", pageUrl(agent, "notes"), { token, raw: '{"content":"half a pair: \\ud83e"}' });
    expect(lone.status).toBe(400);
    expect((await json<ErrorBody>(lone)).error.message).toContain("well-formed");
    const notJson = await call("PUT", pageUrl(agent, "notes"), { token, raw: "content=hello" });
    expect((await json<ErrorBody>(notJson)).error.code).toBe("invalid_json");
    expect((await call("GET", pageUrl(agent, "notes"), { token })).status).toBe(404);
  });

  it.each(["0", "-1", "1.5", "abc"])("refuses ?version=%s", async (version) => {
    const { agent, token } = await declared();
    await call("PUT", pageUrl(agent, "notes"), { token, body: { content: "x" } });
    const res = await call("GET", pageUrl(agent, "notes", `?version=${version}`), { token });
    expect(res.status).toBe(400);
    expect((await json<ErrorBody>(res)).error.code).toBe("validation_failed");
  });
});

describe("memory page scopes", () => {
  it("keeps one agent's token out of another agent's pages, for every route", async () => {
    const { token: myToken } = await declared();
    const { agent: theirs, token: theirToken } = await declared();
    expect((await call("PUT", pageUrl(theirs, "plans"), { token: theirToken, body: { content: "secret plans" } })).status).toBe(201);

    for (const [method, url, body] of [
      ["GET", pageUrl(theirs), undefined],
      ["GET", pageUrl(theirs, "plans"), undefined],
      ["GET", pageUrl(theirs, "plans", "?version=1"), undefined],
      ["PUT", pageUrl(theirs, "plans"), { content: "overwritten" }],
      ["PUT", pageUrl(theirs, "new-page"), { content: "planted" }],
      ["DELETE", pageUrl(theirs, "plans"), undefined],
      // A missing page answers the same as an existing one.
      ["GET", pageUrl(theirs, "no-such-page"), undefined],
    ] as const) {
      const res = await call(method, url, { token: myToken, ...(body === undefined ? {} : { body }) });
      expect(res.status).toBe(403);
      const text = await res.text();
      expect(text).toContain("forbidden");
      expect(text).not.toContain("secret plans");
    }
    expect((await versionRows(theirs, "plans")).map((r) => r.deleted)).toEqual([0]);
    expect(await versionRows(theirs, "new-page")).toEqual([]);
    expect((await json<PageBody>(await call("GET", pageUrl(theirs, "plans"), { token: theirToken }))).content).toBe("secret plans");
  });

  it("does not let a conversation token, or an exact agent scope's prefix, reach agent pages", async () => {
    const agent = await storedAgent();
    const conversationToken = await tokenFor("api:test:*");
    for (const method of ["GET", "PUT", "DELETE"] as const) {
      const res = await call(method, pageUrl(agent, "notes"), {
        token: conversationToken,
        ...(method === "PUT" ? { body: { content: "x" } } : {}),
      });
      expect(res.status).toBe(403);
    }
    expect((await call("GET", pageUrl(agent), { token: conversationToken })).status).toBe(403);
    // `agent:<id>` is exact: it does not cover `<id>x`.
    const exact = await tokenFor(`agent:${agent}`);
    expect((await call("GET", pageUrl(`${agent}x`), { token: exact })).status).toBe(403);
    expect(await versionRows(agent, "notes")).toEqual([]);
  });

  it("lets an agent:* token reach every declared agent whose sources it holds, no undeclared one, and refuses a malformed agent id", async () => {
    const { agent } = await declared();
    const token = await tokenFor("agent:*", `api:mem-${agent}:*`);
    expect((await call("PUT", pageUrl(agent, "notes"), { token, body: { content: "x" } })).status).toBe(201);
    // Nobody may leave pages behind for an id nobody declared (whoever declares it later would be served them).
    const undeclared = freshAgent();
    for (const method of ["PUT", "DELETE"] as const) {
      const refused = await call(method, pageUrl(undeclared, "notes"), { token: await tokenFor("*"), ...(method === "PUT" ? { body: { content: "planted" } } : {}) });
      expect(refused.status).toBe(404);
      expect((await json<ErrorBody>(refused)).error.code).toBe("not_found");
    }
    expect(await versionRows(undeclared, "notes")).toEqual([]);
    const bad = await call("GET", pageUrl("-starts-with-dash"), { token });
    expect(bad.status).toBe(400);
    expect((await json<ErrorBody>(bad)).error.code).toBe("validation_failed");
    expect((await call("GET", pageUrl(agent, "notes"))).status).toBe(401);
  });
});

describe("memory page storage invariants", () => {
  it("refuses to update or delete a version, to skip a number, or to bury a page twice", async () => {
    const agent = await storedAgent();
    await putPage(env.DB, agent, "notes", "v1", NOW);
    const insert = (version: number, deleted: number) =>
      env.DB.prepare(
        `INSERT INTO memory_page_versions (agent_id, path, version, content, content_hash, chars, deleted, created_at)
         VALUES (?, 'notes', ?, '', ?, 0, ?, ?)`,
      )
        .bind(agent, version, sha256Hex(""), deleted, NOW.toISOString())
        .run();

    await expect(
      env.DB.prepare("UPDATE memory_page_versions SET content = 'rewritten' WHERE agent_id = ?").bind(agent).run(),
    ).rejects.toThrow(/immutable/);
    await expect(env.DB.prepare("DELETE FROM memory_page_versions WHERE agent_id = ?").bind(agent).run()).rejects.toThrow(/immutable/);
    await expect(insert(3, 0)).rejects.toThrow(/next number/);
    await expect(deletePage(env.DB, agent, "notes", NOW)).resolves.toEqual({ version: 2 });
    await expect(insert(3, 1)).rejects.toThrow(/only a live page/);
    expect((await getPage(env.DB, agent, "notes", 1))?.content).toBe("v1");
  });

  it("refuses malformed paths in the schema itself, not only at the route", async () => {
    for (const path of ["../escape", "a/./b", "a//b", "/abs", "trailing/", "sp ace"]) {
      await expect(putPage(env.DB, freshAgent(), path, "x", NOW), path).rejects.toThrow(/CHECK constraint/);
    }
  });

  it.each([
    ["..", false],
    [".", false],
    ["a/../b", false],
    ["a/./b", false],
    ["...", true],
    [".hidden/file.md", true],
    ["a/b_c-d.e", true],
  ])("memoryPathSchema: %s → %s", (path, valid) => {
    expect(memoryPathSchema.safeParse(path).success).toBe(valid);
  });

  it("writes one version when the same content is put concurrently", async () => {
    const agent = await storedAgent();
    const results = await Promise.all(Array.from({ length: 5 }, () => putPage(env.DB, agent, "race", "same words", NOW)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.version))).toEqual(new Set([1]));
    expect(await versionRows(agent, "race")).toHaveLength(1);
  });
});

describe("recall for the compactor", () => {
  async function seed(agent: string, pages: Record<string, string>): Promise<void> {
    for (const [path, content] of Object.entries(pages)) await putPage(env.DB, agent, path, content, NOW);
  }

  it("ranks the pages that match the slice first, and returns them whole with version and hash", async () => {
    const agent = await storedAgent();
    await seed(agent, {
      "decisions/vendor": "Vendor B was chosen for compliance. @ceo decided; @eng dissented on latency.",
      "people/ada": "Ada runs the Lisbon office and prefers async updates.",
      "projects/printing": "Page size for the brochure is undecided between A4 and Letter.",
    });
    const slice = "[m1] @ceo (user): so we're going with the vendor? compliance said vendor B is fine";
    const recalled = await recallPages(env.DB, agent, slice, 10_000, 5);
    expect(recalled[0]).toEqual({
      path: "decisions/vendor",
      version: 1,
      contentHash: sha256Hex("Vendor B was chosen for compliance. @ceo decided; @eng dissented on latency."),
      content: "Vendor B was chosen for compliance. @ceo decided; @eng dissented on latency.",
    });
    expect(recalled.map((p) => p.path)).not.toContain("people/ada");
  });

  it("matches words in the path, folds case and accents", async () => {
    const agent = await storedAgent();
    await seed(agent, { "recipes/cafe": "Espresso ratio 1:2.", "misc/other": "Unrelated note about gardening." });
    expect((await recallPages(env.DB, agent, "RECIPES please", 1_000, 5)).map((p) => p.path)).toEqual(["recipes/cafe"]);
    expect((await recallPages(env.DB, agent, "un CAFÉ s'il vous plaît", 1_000, 5)).map((p) => p.path)).toEqual(["recipes/cafe"]);
  });

  it("never exceeds the budget: skips a page that does not fit and keeps trying smaller ones", async () => {
    const agent = await storedAgent();
    await seed(agent, {
      "zephyr/zephyr": "zephyr ".repeat(150),
      "notes/a": "one zephyr among other words",
      "notes/b": "another zephyr among several other, longer words",
    });
    const all = await recallPages(env.DB, agent, "zephyr", 100_000, 10);
    // The large page ranks first, so a packer that stopped at the first misfit would return nothing.
    expect(all.map((p) => p.path)).toEqual(["zephyr/zephyr", "notes/a", "notes/b"]);
    const total = (pages: readonly { content: string }[]) => pages.reduce((sum, p) => sum + p.content.length, 0);

    for (const budget of [0, 1, 15, 16, 40, 49, 50, 100, 1_000, 1_500, total(all) - 1, total(all)]) {
      const recalled = await recallPages(env.DB, agent, "zephyr", budget, 10);
      expect(total(recalled)).toBeLessThanOrEqual(budget);
    }
    const smallOnly = await recallPages(env.DB, agent, "zephyr", 100, 10);
    expect(smallOnly.map((p) => p.path)).toEqual(["notes/a", "notes/b"]);
    expect(await recallPages(env.DB, agent, "zephyr", total(all), 10)).toHaveLength(3);
  });

  it("returns at most maxPages pages, in rank order", async () => {
    const agent = await storedAgent();
    await seed(agent, {
      "topics/quasar-1": "quasar",
      "topics/quasar-2": "quasar quasar",
      "topics/quasar-3": "quasar quasar quasar",
    });
    const all = await recallPages(env.DB, agent, "quasar", 10_000, 10);
    const two = await recallPages(env.DB, agent, "quasar", 10_000, 2);
    expect(two).toEqual(all.slice(0, 2));
    expect(await recallPages(env.DB, agent, "quasar", 10_000, 0)).toEqual([]);
  });

  it.each([
    'he said "vendor',
    "vendor AND NOT compliance",
    "NEAR(vendor compliance, 2)",
    "vend* OR *",
    "(vendor OR (compliance",
    "path:vendor content:compliance {path content}: vendor",
    "^vendor - + vendor",
    '"" "\'" \\"',
    "",
    "a an to of in",
    "AND OR NOT NEAR",
  ])("treats FTS5 syntax in the slice as plain words: %s", async (slice) => {
    const agent = await storedAgent();
    await seed(agent, { "decisions/vendor": "Vendor B, for compliance." });
    const recalled = await recallPages(env.DB, agent, slice, 10_000, 5);
    const mentionsVendor = /vendor|compliance/i.test(slice);
    expect(recalled.map((p) => p.path)).toEqual(mentionsVendor ? ["decisions/vendor"] : []);
  });

  it("never fails and never exceeds the budget, whatever the slice holds", async () => {
    const agent = await storedAgent();
    await seed(agent, {
      "a/alpha": "alpha beta gamma delta",
      "b/beta": `beta ${"epsilon ".repeat(50)}`,
      "c/gamma": "gamma (NEAR) \"quoted\" col:on * star",
    });
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: fc.constantFrom(..."alphbetgmdu \"'()*:^-+{}NEARORNOT\\\u0301é🧭"), maxLength: 120 }),
        fc.integer({ min: 0, max: 500 }),
        async (slice, budget) => {
          const recalled = await recallPages(env.DB, agent, slice, budget, 3);
          expect(recalled.length).toBeLessThanOrEqual(3);
          expect(recalled.reduce((sum, p) => sum + p.content.length, 0)).toBeLessThanOrEqual(budget);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("never recalls a deleted page, nor an overwritten version's words", async () => {
    const agent = await storedAgent();
    await seed(agent, { "notes/obsolete": "The nebula project is cancelled.", "notes/current": "Old text mentioning nebula." });
    await deletePage(env.DB, agent, "notes/obsolete", NOW);
    await putPage(env.DB, agent, "notes/current", "New text about the orbit.", NOW);

    // The index holds one row per live page, so the tombstone and the overwritten text are gone
    // from it, not merely filtered out of the results.
    const indexed = await agentPageTerms(env.DB, agent);
    expect([...indexed]).toEqual([["notes/current", { scope: [indexed.get("notes/current")?.["scope"]?.[0]], ...(await expectedTerms(env.DB, { path: "notes/current", content: "New text about the orbit." })) }]]);
    expect(await recallPages(env.DB, agent, "nebula", 10_000, 5)).toEqual([]);
    expect(await recallPages(env.DB, agent, "obsolete cancelled", 10_000, 5)).toEqual([]);
    expect(await recallPages(env.DB, agent, "orbit", 10_000, 5)).toEqual([
      { path: "notes/current", version: 2, contentHash: sha256Hex("New text about the orbit."), content: "New text about the orbit." },
    ]);

    // Writing a deleted page again makes it recallable again, at its new version.
    await putPage(env.DB, agent, "notes/obsolete", "The nebula project is back on.", NOW);
    expect((await recallPages(env.DB, agent, "nebula", 10_000, 5)).map((p) => [p.path, p.version])).toEqual([["notes/obsolete", 3]]);
  });

  it("never recalls another agent's pages", async () => {
    const mine = await storedAgent();
    const theirs = await storedAgent();
    await seed(theirs, { "secrets/launch": "Launch codename is pelican, date is March." });
    await seed(mine, { "notes/birds": "We saw a heron." });
    const recalled = await recallPages(env.DB, mine, "pelican launch codename heron", 10_000, 10);
    expect(recalled.map((p) => p.path)).toEqual(["notes/birds"]);
    expect(JSON.stringify(recalled)).not.toContain("pelican");
  });
});

describe("recallMatchExpression", () => {
  it("quotes deduplicated words, drops short and common ones, and ranks by frequency", () => {
    expect(recallMatchExpression("The vendor, the VENDOR and the compliance (of it) — vendor!")).toBe('{path content grams} : ("vendor" OR "compliance")');
  });

  it("keeps query syntax out of the expression", () => {
    const expression = recallMatchExpression('NEAR(alpha beta) AND "gamma" path:delta* ^omega');
    expect(expression).toBe('{path content grams} : ("near" OR "alpha" OR "beta" OR "gamma" OR "path" OR "delta" OR "omega")');
  });

  it(`caps the number of terms at ${MAX_RECALL_TERMS}`, () => {
    const words = Array.from({ length: 100 }, (_, i) => `word${String(i).padStart(3, "0")}`);
    expect(recallMatchExpression(words.join(" "))?.split(" OR ")).toHaveLength(MAX_RECALL_TERMS);
    expect(recallMatchExpression(words.join(" "))).toMatch(/^\{path content grams\} : \("word000" OR .* OR "word031"\)$/);
  });

  it("returns nothing for a slice without a qualifying word", () => {
    expect(recallMatchExpression("ok, so: is it? (no) — 42 :)")).toBeUndefined();
  });
});
