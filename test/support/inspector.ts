import { exports } from "cloudflare:workers";
import { expect } from "vitest";

/** An inspector page as a signed-in browser gets it. */
export async function inspectorPage(token: string, path: string): Promise<string> {
  const origin = "http://foldline.test";
  const login = await exports.default.fetch(
    new Request(`${origin}/inspector/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin, "sec-fetch-site": "same-origin" },
      body: new URLSearchParams({ token }).toString(),
    }),
  );
  const cookie = login.headers.get("set-cookie")?.split(";")[0] ?? "";
  const page = await exports.default.fetch(new Request(`${origin}${path}`, { headers: { cookie } }));
  expect(page.status).toBe(200);
  return page.text();
}
