import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readBody, send } from "../support/loopback-http";
import { SIGNATURE_HEADER, verifySignature } from "../../src/external/signature";

/**
 * A loopback external bot for the `http` reply mode, run in Node by vitest's globalSetup: Foldline
 * reaches it over real HTTP, and it checks every request with the helper Foldline ships
 * (src/external/signature.ts) exactly as a bot in production would — so a signature the helper
 * cannot verify fails here, not only in a unit test.
 *
 * - `POST /reply`: verifies `X-Foldline-Signature` against the run's shared key (401 with the reason
 *   when it fails) and answers `{ text: "echo: <the request's last user message>" }`;
 * - `POST /down`: 503, as a bot that is restarting answers (its requests are not recorded);
 * - `GET /__requests`: every request received, oldest first, with the check's outcome;
 * - `POST /__reset`: forgets them.
 *
 * Test files run in parallel against one server, so what it received lives in a *session*:
 * `/s/<session>/reply` etc. address one session, the bare paths the default one. A test file that
 * reads or resets what the bot received uses its own session.
 */

/** The shared HMAC key, fresh each run; vitest.config.ts binds it as the Worker secret BOT_HMAC_SECRET. */
const FAKE_BOT_SECRET = `fake-bot-${crypto.randomUUID()}`;

export interface ReceivedRequest {
  readonly path: string;
  readonly contentType: string | null;
  readonly signature: string | null;
  /** The shipped helper's verdict: `ok`, or why it refused. */
  readonly verdict: "ok" | "malformed" | "stale" | "mismatch";
  readonly body: unknown;
}

export interface FakeBot {
  readonly origin: string;
  readonly secret: string;
  close(): Promise<void>;
}

function lastUserText(payload: unknown): string {
  const messages: unknown = (payload as { request?: { messages?: unknown } } | null)?.request?.messages;
  if (!Array.isArray(messages)) return "";
  const last: unknown = [...messages].reverse().find((m: unknown) => (m as { role?: unknown } | null)?.role === "user");
  const content: unknown = (last as { content?: unknown } | undefined)?.content;
  return typeof content === "string" ? content : "";
}

export async function startFakeBot(): Promise<FakeBot> {
  const sessions = new Map<string, ReceivedRequest[]>();
  const server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? "/", "http://fake-bot");
      const scoped = /^\/s\/([^/]+)(\/.*)$/.exec(url.pathname);
      const name = scoped?.[1] ?? "";
      const path = scoped?.[2] ?? url.pathname;
      const received = sessions.get(name) ?? [];
      sessions.set(name, received);
      const raw = await readBody(request);
      if (path === "/__requests") return send(response, 200, received);
      if (path === "/__reset") {
        received.length = 0;
        return send(response, 200, { ok: true });
      }
      if (request.method === "POST" && path === "/down") return send(response, 503, { error: "restarting" });
      // A bot whose error page quotes the message it could not answer, as many frameworks' do.
      if (request.method === "POST" && path === "/quote") return send(response, 500, { error: `could not answer: ${lastUserText(JSON.parse(raw) as unknown)}` });
      if (request.method !== "POST" || path !== "/reply") return send(response, 404, { error: "not found" });
      const header = request.headers[SIGNATURE_HEADER.toLowerCase()];
      const signature = typeof header === "string" ? header : null;
      // The raw text is what was signed: verify before parsing, like a real bot must.
      const checked = await verifySignature(FAKE_BOT_SECRET, raw, signature, Math.floor(Date.now() / 1_000));
      let body: unknown = null;
      try {
        body = JSON.parse(raw) as unknown;
      } catch {
        body = raw;
      }
      received.push({ path, contentType: request.headers["content-type"] ?? null, signature, verdict: checked.ok ? "ok" : checked.reason, body });
      if (!checked.ok) return send(response, 401, { error: `bad signature: ${checked.reason}` });
      return send(response, 200, { text: `echo: ${lastUserText(body)}` });
    })().catch((error: unknown) => send(response, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    secret: FAKE_BOT_SECRET,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error === undefined ? resolve() : reject(error)))),
  };
}
