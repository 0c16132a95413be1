import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readBody, send } from "../support/loopback-http";

/**
 * A loopback operator webhook for Foldline's alerts, run in Node by vitest's globalSetup: the Worker
 * reaches it over real HTTP at `OPS_ALERT_URL`. It checks nothing itself: it keeps each request's
 * raw body and signature header exactly as they arrived, so a test verifies the signature with its
 * own HMAC, independently of the code that made it.
 *
 * - `POST /alerts`: recorded, then answered 200, or 500 while a failure scripted for the alert's
 *   conversation has answers left;
 * - `POST /__fail` with `{ "conversationId", "times" }`: the next `times` alerts of that conversation
 *   are answered 500 (a scripted failure names a conversation, so an alert of another test still in
 *   flight never takes it);
 * - `GET /__requests`: every alert received, oldest first, with the status it was answered.
 */

/** The signing key, fresh each run; vitest.config.ts binds it as the Worker secret OPS_ALERT_SECRET. */
const FAKE_ALERTS_SECRET = `fake-alerts-${crypto.randomUUID()}`;

export interface ReceivedAlert {
  readonly contentType: string | null;
  readonly signature: string | null;
  /** The body as received, the bytes the signature covers. */
  readonly raw: string;
  readonly status: number;
}

export interface FakeAlerts {
  readonly origin: string;
  readonly secret: string;
  close(): Promise<void>;
}

function conversationOf(raw: string): string | undefined {
  try {
    const body = JSON.parse(raw) as { conversationId?: unknown } | null;
    return typeof body?.conversationId === "string" ? body.conversationId : undefined;
  } catch {
    return undefined;
  }
}

export async function startFakeAlerts(): Promise<FakeAlerts> {
  const received: ReceivedAlert[] = [];
  const failures = new Map<string, number>();
  const server = createServer((request, response) => {
    void (async () => {
      const path = new URL(request.url ?? "/", "http://fake-alerts").pathname;
      const raw = await readBody(request);
      if (request.method === "GET" && path === "/__requests") return send(response, 200, received);
      if (request.method === "POST" && path === "/__fail") {
        const { conversationId, times } = JSON.parse(raw) as { conversationId: string; times: number };
        failures.set(conversationId, times);
        return send(response, 200, { ok: true });
      }
      if (request.method !== "POST" || path !== "/alerts") return send(response, 404, { error: "not found" });
      const conversation = conversationOf(raw);
      const left = conversation === undefined ? 0 : (failures.get(conversation) ?? 0);
      if (conversation !== undefined && left > 0) failures.set(conversation, left - 1);
      const status = left > 0 ? 500 : 200;
      const header = request.headers["x-foldline-signature"];
      received.push({ contentType: request.headers["content-type"] ?? null, signature: typeof header === "string" ? header : null, raw, status });
      return send(response, status, status === 200 ? { ok: true } : { error: "scripted failure" });
    })().catch((error: unknown) => send(response, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    secret: FAKE_ALERTS_SECRET,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error === undefined ? resolve() : reject(error)))),
  };
}
