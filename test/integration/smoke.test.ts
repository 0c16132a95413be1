import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";

it("answers health", async () => {
  const res = await exports.default.fetch("http://foldline.test/healthz");
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ ok: true });
  expect(env.TELEGRAM_WEBHOOK_SECRET_7001).toBe("test-webhook-secret-7001");
});
