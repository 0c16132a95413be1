import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isolateTokens, TOKEN_CACHE_TTL_MS } from "../../src/api/token-cache";
import { sha256Hex } from "../../src/core/hash";
import { D1_METER_HEADER, D1_READS_HEADER } from "../../bench/worker/d1-meter";
import { placedShardOf } from "../support/shards";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, logRows, sourceEvent, tokenFor } from "./helpers";

describe("bearer tokens scoped to conversations", () => {
  it("refuses /v1 without a valid token", async () => {
    const conversation = freshConversation();
    for (const headers of [{}, { authorization: "Bearer fl_not_a_real_token_at_all" }, { authorization: "Basic dXNlcjpwYXNz" }]) {
      const res = await call("GET", eventsPath(conversation), { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toContain("Bearer");
      expect((await json<ErrorBody>(res)).error.code).toBe("unauthorized");
    }
  });

  it("stores only the token's hash", async () => {
    const token = await tokenFor("api:x:*");
    const rows = await env.DB.prepare("SELECT token_hash FROM api_tokens").all<{ token_hash: string }>();
    expect(rows.results.map((r) => r.token_hash)).toContain(sha256Hex(token));
    expect(JSON.stringify(rows.results)).not.toContain(token);
  });

  it("keeps one conversation's token out of another, for reads and writes", async () => {
    const mine = freshConversation("api:tenant-a");
    const theirs = freshConversation("api:tenant-b");
    const myToken = await tokenFor(mine);
    const theirToken = await tokenFor("api:tenant-b:*");
    expect((await call("POST", eventsPath(theirs), { token: theirToken, body: sourceEvent("k", "m", "secret plans") })).status).toBe(201);

    for (const [method, path, body] of [
      ["GET", eventsPath(theirs), undefined],
      ["GET", `/v1/conversations/${theirs}/turns`, undefined],
      ["POST", eventsPath(theirs), sourceEvent("k2", "m2", "injected")],
      ["POST", eventsPath(theirs, "/batch"), { events: [sourceEvent("k3", "m3", "injected")] }],
    ] as const) {
      const res = await call(method, path, { token: myToken, ...(body === undefined ? {} : { body }) });
      expect(res.status).toBe(403);
      const text = await res.text();
      expect(text).toContain("forbidden");
      expect(text).not.toContain("secret plans");
    }
    expect(await logRows(theirs)).toHaveLength(1);
    expect((await call("GET", eventsPath(mine), { token: myToken })).status).toBe(200);
  });

  it("does not treat a prefix of an exact scope as a wildcard", async () => {
    const base = freshConversation();
    const token = await tokenFor(base);
    expect((await call("GET", eventsPath(`${base}x`), { token })).status).toBe(403);
  });

  it("refuses a revoked token once the isolate's cached check has expired, and re-reads no token within it", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    // Placed first: this isolate then holds the placement, so what the meter counts below is the
    // token's row and the log, not the lookup of where a conversation nothing placed would live.
    await placedShardOf(conversation);
    let now = Date.now();
    isolateTokens.setClock(() => now);
    try {
      const metered = { token, headers: { [D1_METER_HEADER]: "on" } };
      const trips = (res: Response) => Number(/round-trips=(\d+)/.exec(res.headers.get(D1_READS_HEADER) ?? "")?.[1]);
      const first = await call("GET", eventsPath(conversation), metered);
      expect(first.status).toBe(200);
      // The token's row, then the page of the log; within the TTL, the page alone.
      expect(trips(first)).toBe(2);
      await env.DB.prepare("UPDATE api_tokens SET revoked_at = ? WHERE token_hash = ?").bind(new Date().toISOString(), sha256Hex(token)).run();
      now += TOKEN_CACHE_TTL_MS - 1;
      const cached = await call("GET", eventsPath(conversation), metered);
      expect(cached.status).toBe(200);
      expect(trips(cached)).toBe(1);
      now += 1;
      expect((await call("GET", eventsPath(conversation), { token })).status).toBe(401);
    } finally {
      isolateTokens.setClock(Date.now);
    }
  });

  it("refuses a token revoked before it was ever presented at once", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    await env.DB.prepare("UPDATE api_tokens SET revoked_at = ? WHERE token_hash = ?").bind(new Date().toISOString(), sha256Hex(token)).run();
    expect((await call("GET", eventsPath(conversation), { token })).status).toBe(401);
  });
});
