import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FoldlineRpc } from "../../src/rpc/entrypoint";
import { freshConversation, tokenFor } from "./helpers";
import { CONNECTION_LOST, faultyD1 } from "./seams-faults";

/**
 * RPC answers a failure a retry fixes as HTTP does: `unavailable` with the seconds to wait, not
 * `internal`; a defect stays `internal`.
 */
describe("FoldlineRpc when storage fails", () => {
  it("answers a lost D1 connection as unavailable, and a retry with storage back succeeds", async () => {
    const conversation = freshConversation("api:rpc-unavailable");
    const token = await tokenFor(conversation);
    const down = new Proxy(env, { get: (target, key) => (key === "DB" ? faultyD1(target.DB, () => ({ when: "before", error: () => new Error(CONNECTION_LOST) })) : Reflect.get(target, key)) });
    const failing = await new FoldlineRpc(createExecutionContext(), down).incidents(token, conversation);
    expect(failing).toMatchObject({ ok: false, error: { code: "unavailable", reason: "storage", retryAfterSeconds: expect.any(Number) as unknown as number } });

    const back = await new FoldlineRpc(createExecutionContext(), env).incidents(token, conversation);
    expect(back.ok).toBe(true);
  });

  it("keeps a defect an internal error", async () => {
    const conversation = freshConversation("api:rpc-unavailable");
    const token = await tokenFor(conversation);
    const broken = new Proxy(env, { get: (target, key) => (key === "DB" ? faultyD1(target.DB, () => ({ when: "before", error: () => new TypeError("x is not a function") })) : Reflect.get(target, key)) });
    const failing = await new FoldlineRpc(createExecutionContext(), broken).incidents(token, conversation);
    expect(failing).toMatchObject({ ok: false, error: { code: "internal" } });
  });
});
