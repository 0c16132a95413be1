import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback stand-in for the Telegram Bot API, run in Node by vitest's globalSetup so the client
 * in src/telegram is exercised over real HTTP (the network edge), with nothing in it patched.
 *
 * It serves `POST /bot<token>/sendMessage` with a JSON body, records every Bot API request, and
 * answers like Telegram: `{ ok: true, result: <Message> }` with message ids counting up from
 * FIRST_MESSAGE_ID, or a scripted `{ ok: false, error_code, description, parameters? }`. Like the
 * real server it refuses a request without `chat_id` or with a text that is empty or longer than
 * 4,096 characters, so a client that splits wrongly fails here too.
 *
 * Test files run in parallel against one server, so all state lives in a *session*:
 * `/s/<session>/bot<token>/…` and `/s/<session>/__script` etc. address one session, and the bare
 * paths address the default one. Control endpoints (per session):
 * - `POST __script` with a JSON array of steps: replaces the queue the next sends answer from;
 * - `GET __requests`: the recorded Bot API requests, oldest first;
 * - `POST __reset`: clears the queue and the recordings, and restarts the message ids.
 */

export interface ScriptStep {
  /** HTTP status and `error_code`; 200 (a sent message) by default. */
  readonly status?: number;
  /** The error's description; Telegram's usual one for the status when absent. */
  readonly description?: string;
  /** `parameters.retry_after` in seconds (Telegram sends it with every 429). */
  readonly retryAfter?: number;
  /** The id of the sent message; the session's next id when absent. */
  readonly messageId?: number;
  /** Wait this long before answering (a slow server, for timeouts). */
  readonly delayMs?: number;
  /** A raw body to send as is, with the status (malformed-answer tests). */
  readonly rawBody?: string;
  /** Close the connection without answering (a network failure mid-request). */
  readonly hangUp?: boolean;
}

export interface RecordedRequest {
  readonly token: string;
  readonly method: string;
  readonly contentType: string | null;
  readonly body: unknown;
}

interface Session {
  script: ScriptStep[];
  requests: RecordedRequest[];
  nextMessageId: number;
}

export interface FakeTelegram {
  /** The origin to use as TELEGRAM_API_BASE_URL (`http://127.0.0.1:<port>`, default session). */
  readonly origin: string;
  close(): Promise<void>;
}

/** Distinct from every small number a test counts (parts, chat ids), so a mix-up shows. */
export const FIRST_MESSAGE_ID = 1001;
const MAX_TEXT_CHARS = 4_096;

const DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: "Bad Request: chat not found",
  403: "Forbidden: bot was blocked by the user",
  404: "Not Found",
  500: "Internal Server Error",
  502: "Bad Gateway",
};

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

function send(response: ServerResponse, status: number, body: unknown): void {
  if (response.destroyed || response.writableEnded) return;
  const text = typeof body === "string" ? body : JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json" });
  response.end(text);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function apiError(response: ServerResponse, status: number, description: string, retryAfter?: number): void {
  const parameters = retryAfter === undefined ? {} : { parameters: { retry_after: retryAfter } };
  send(response, status, { ok: false, error_code: status, description, ...parameters });
}

/** Telegram's own checks on a sendMessage body, in its words. */
function refusal(body: unknown): string | undefined {
  if (!isRecord(body) || (typeof body["chat_id"] !== "number" && typeof body["chat_id"] !== "string")) return "Bad Request: chat_id is empty";
  const text = body["text"];
  if (typeof text !== "string" || text.trim() === "") return "Bad Request: message text is empty";
  if (text.length > MAX_TEXT_CHARS) return "Bad Request: message is too long";
  return undefined;
}

function sentMessage(body: Record<string, unknown>, token: string, messageId: number): Record<string, unknown> {
  const chatId = body["chat_id"];
  const reply = body["reply_parameters"];
  return {
    message_id: messageId,
    date: Math.floor(Date.now() / 1000),
    chat: { id: chatId, type: typeof chatId === "number" && chatId < 0 ? "supergroup" : "private" },
    from: { id: Number(token.split(":")[0]), is_bot: true, first_name: "Fake bot" },
    text: body["text"],
    ...(typeof body["message_thread_id"] === "number" ? { message_thread_id: body["message_thread_id"], is_topic_message: true } : {}),
    ...(isRecord(reply) && typeof reply["message_id"] === "number" ? { reply_to_message: { message_id: reply["message_id"] } } : {}),
  };
}

export async function startFakeTelegram(): Promise<FakeTelegram> {
  const sessions = new Map<string, Session>();
  const sessionOf = (name: string): Session => {
    let session = sessions.get(name);
    if (session === undefined) {
      session = { script: [], requests: [], nextMessageId: FIRST_MESSAGE_ID };
      sessions.set(name, session);
    }
    return session;
  };

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    const scoped = /^\/s\/([A-Za-z0-9._-]{1,100})(\/.*)$/.exec(url.pathname);
    const session = sessionOf(scoped?.[1] ?? "");
    const path = scoped?.[2] ?? url.pathname;
    const text = await readBody(request);

    if (request.method === "POST" && path === "/__script") {
      const steps = parseJson(text);
      if (!Array.isArray(steps)) return send(response, 400, { error: "the script is a JSON array of steps" });
      session.script = steps as ScriptStep[];
      return send(response, 204, "");
    }
    if (request.method === "GET" && path === "/__requests") return send(response, 200, session.requests);
    if (request.method === "POST" && path === "/__reset") {
      session.script = [];
      session.requests = [];
      session.nextMessageId = FIRST_MESSAGE_ID;
      return send(response, 204, "");
    }

    // Telegram answers a path that is not /bot<token>/<method> with a bare 404.
    const call = /^\/bot(\d+:[A-Za-z0-9_-]+)\/([A-Za-z]+)$/.exec(path);
    if (call === null) return apiError(response, 404, "Not Found");
    const [, token = "", method = ""] = call;
    const body = parseJson(text);
    session.requests.push({ token, method, contentType: request.headers["content-type"] ?? null, body });
    if (request.method !== "POST" || method !== "sendMessage") return apiError(response, 404, "Not Found: method not found");
    const refused = refusal(body);
    if (refused !== undefined || !isRecord(body)) return apiError(response, 400, refused ?? "Bad Request");

    const step = session.script.shift() ?? {};
    if (step.delayMs !== undefined) {
      const delay = step.delayMs;
      // A client that gave up (timeout) closes the socket; stop waiting for it.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        response.on("close", () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (step.hangUp === true) {
      response.socket?.destroy();
      return;
    }
    const status = step.status ?? 200;
    if (step.rawBody !== undefined) return send(response, status, step.rawBody);
    if (status === 429) return apiError(response, 429, step.description ?? `Too Many Requests: retry after ${step.retryAfter ?? 1}`, step.retryAfter);
    if (status !== 200) return apiError(response, status, step.description ?? DESCRIPTIONS[status] ?? `Error ${status}`, step.retryAfter);
    const messageId = step.messageId ?? session.nextMessageId;
    session.nextMessageId = Math.max(session.nextMessageId, messageId) + 1;
    return send(response, 200, { ok: true, result: sentMessage(body, token, messageId) });
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => send(response, 500, { ok: false, error_code: 500, description: String(error) }));
  });
  // Loopback only: the fake is reachable from this machine and nowhere else.
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error === undefined ? resolve() : reject(error)));
      }),
  };
}
