import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback stand-in for an OpenAI-compatible endpoint, run in Node by vitest's globalSetup so
 * tests exercise the real `openai` SDK over real HTTP (the network edge), with nothing in the code
 * under test patched.
 *
 * It serves `POST /v1/chat/completions`, records every request, and answers from a script that a
 * test sets over HTTP. Test files run in parallel against one server, so all state lives in a
 * *session*: `/s/<session>/v1/...` and `/s/<session>/__script` etc. address one session, and the
 * bare paths address the default session. A test that points its base URL at its own session
 * cannot see or disturb another's script or requests.
 *
 * Control endpoints (per session):
 * - `POST __script` with a JSON array of steps: replaces the queue the next completions answer from;
 * - `GET __requests`: the recorded completion requests, oldest first;
 * - `POST __reset`: clears the queue and the recordings (and lets every held request answer);
 * - `GET __held`: the names of the requests a `hold` step is holding, in arrival order;
 * - `POST __release` with `{ "hold": name }`: lets the requests held under that name answer.
 *
 * With an empty queue it answers a valid reply built from the request (see `defaultContent`).
 *
 * The same server is the benchmark's and the chaos run's model (`npm run bench`, `npm run chaos`
 * import it in-process): `calls` counts the characters of every completion request section by
 * section, so the compactor-input metric is measured at the model's edge; `summaryChars` sizes the
 * default reply; `delayMs` holds every answer (a slow model, so that a crash can land during a
 * call); and a compaction request for the model `FLAKY_MODEL` fails with 500 on the first attempt
 * at every slice, so the queue redelivers the same packet. Each call says which process sent it
 * (`process`), so the memory extraction that follows a compaction is counted apart, and keeps its
 * messages, so the bench can compare the extractor's request with the compactor's.
 *
 * A request's instructions are its last system message: the memory extractor's request repeats
 * the compactor's leading messages (its system prompt included) and adds its own system message
 * after them (src/core/extractor-io.ts), so `whenSystemIncludes`, `process` and the default reply
 * read the last one. For every other request it is the first and only one.
 */

export interface ScriptStep {
  /** HTTP status; 200 by default. Any other status answers an OpenAI-style error body. */
  readonly status?: number;
  /** The message content (null for a reply without content); built from the request when absent. */
  readonly content?: string | null;
  readonly finishReason?: string;
  readonly usage?: { readonly prompt_tokens: number; readonly completion_tokens: number };
  /** The model the reply reports; `<requested>-fake` when absent. */
  readonly model?: string;
  readonly id?: string;
  /** `retry-after` header value in seconds (for error statuses). */
  readonly retryAfter?: number;
  /** The error body's `message` (for error statuses): what a provider says, which may quote the request. */
  readonly errorMessage?: string;
  /** Wait this long before answering (a slow provider, for timeouts). */
  readonly delayMs?: number;
  /**
   * Hold the request, unanswered, until the test releases this name (`POST __release`): a call that
   * hangs for exactly as long as the test says, so a test asserts what happened meanwhile by order,
   * never by how long anything took.
   */
  readonly hold?: string;
  /** A raw body to send as is, instead of a chat completion (malformed-response tests). */
  readonly rawBody?: string;
  /**
   * Only requests whose (last) system message contains this text take the step (e.g. the
   * compactor's prompt, to inject compactor failures while the agent's replies go through); others skip it.
   */
  readonly whenSystemIncludes?: string;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

interface Session {
  script: ScriptStep[];
  requests: RecordedRequest[];
  held: { readonly name: string; readonly release: () => void }[];
}

/** What one completion request carried, by section of the compactor's input (characters). */
interface ModelCall {
  readonly at: number;
  readonly model: string;
  /** Which of Foldline's processes asked, by its last system message: a compaction, or the memory extraction after it. */
  readonly process: "compactor" | "extractor";
  /** The first system message's characters (the compactor's prompt and trusted documents). */
  readonly systemChars: number;
  /** The first user message's characters (the compactor's tagged input). */
  readonly userChars: number;
  /** Every message's characters: the whole request. */
  readonly totalChars: number;
  /** The messages as sent (role and text). */
  readonly messages: readonly { readonly role: string; readonly content: string }[];
  /** The structured-output schema's name (`response_format.json_schema.name`), or null without one. */
  readonly schema: string | null;
  readonly previousBoundaryChars: number;
  readonly amendmentsChars: number;
  readonly pagesChars: number;
  readonly sliceChars: number;
  /** The slice's hash: the same packet across retries. */
  readonly sliceKey: string;
  status: number;
  replyChars: number;
}

interface FakeOpenAiOptions {
  /** The default reply's largest size (its summary, in characters); 120 unless said. */
  readonly summaryChars?: number;
  /** Hold every answer this long. */
  readonly delayMs?: number;
}

export interface FakeOpenAi {
  /** The base URL to give the SDK (`http://127.0.0.1:<port>/v1`, default session). */
  readonly baseUrl: string;
  readonly origin: string;
  /** Every completion request, in arrival order (all sessions). */
  readonly calls: ModelCall[];
  /** Answers being held by `delayMs`. */
  inFlight(): number;
  close(): Promise<void>;
}

/** The model that fails the first attempt at every slice. */
const FLAKY_MODEL = "bench-flaky";
/** How the memory extractor's system prompt begins (src/core/extractor-io.ts). */
const EXTRACTOR_PROMPT_START = "You are the memory extractor";

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (response.destroyed || response.writableEnded) return;
  const text = typeof body === "string" ? body : JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", ...headers });
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

/** The text messages of a chat-completions body, in order. */
function messagesOf(body: unknown): { role: string; content: string }[] {
  if (!isRecord(body) || !Array.isArray(body["messages"])) return [];
  return body["messages"].flatMap((m: unknown) => (isRecord(m) && typeof m["role"] === "string" && typeof m["content"] === "string" ? [{ role: m["role"], content: m["content"] }] : []));
}

function messageContent(body: Record<string, unknown>, role: string): string {
  return messagesOf(body).find((m) => m.role === role)?.content ?? "";
}

/** The instructions the request runs under: its last system message ("" when it has none). */
function systemText(body: unknown): string {
  return messagesOf(body).findLast((m) => m.role === "system")?.content ?? "";
}

const isExtractorRequest = (body: unknown): boolean => systemText(body).startsWith(EXTRACTOR_PROMPT_START);

function schemaName(format: unknown): string | null {
  const schema = isRecord(format) ? format["json_schema"] : undefined;
  return isRecord(schema) && typeof schema["name"] === "string" ? schema["name"] : null;
}

/** A tagged section's body of the compactor's input ("" when it says "(none)" or is absent). */
function section(input: string, tag: string): string {
  const body = new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`).exec(input)?.[1] ?? "";
  return body === "(none)" ? "" : body;
}

const unescape = (text: string): string => text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");

/**
 * A well-formed reply for the request: the slice's words without their line markup (ids,
 * handles, roles), up to `summaryChars`. Projection JSON when the system prompt asks for the
 * seed-001 object (it names `salientFacts`), plain text otherwise.
 */
function defaultContent(body: Record<string, unknown>, summaryChars: number): string {
  const slice = section(messageContent(body, "user"), "slice");
  const words = unescape(slice.replace(/<\/?turn>/g, " ").replace(/\[[^\]]*\] @\S+ \((user|assistant)\):/g, " "))
    .split(/\s+/)
    .filter((w) => w !== "");
  let summary = "Fake summary:";
  for (const word of words) {
    if (summary.length + word.length + 1 > summaryChars) break;
    summary += ` ${word}`;
  }
  // The memory extractor's request gets a valid reply that finds nothing; tests script real facts.
  if (isExtractorRequest(body)) return JSON.stringify({ facts: [] });
  return messageContent(body, "system").includes("salientFacts") ? JSON.stringify({ summary, salientFacts: {} }) : summary;
}

function callOf(body: Record<string, unknown>): ModelCall {
  const system = messageContent(body, "system");
  const user = messageContent(body, "user");
  const slice = section(user, "slice");
  const messages = messagesOf(body);
  return {
    at: Date.now(),
    model: typeof body["model"] === "string" ? body["model"] : "",
    process: isExtractorRequest(body) ? "extractor" : "compactor",
    systemChars: system.length,
    userChars: user.length,
    totalChars: messages.reduce((n, m) => n + m.content.length, 0),
    messages,
    schema: schemaName(body["response_format"]),
    previousBoundaryChars: section(user, "previous-boundary").length,
    amendmentsChars: section(user, "amendments").length,
    pagesChars: section(user, "existing-memory-pages").length,
    sliceChars: slice.length,
    sliceKey: createHash("sha256").update(slice).digest("hex").slice(0, 16),
    status: 200,
    replyChars: 0,
  };
}

const tokens = (text: string): number => Math.ceil(text.length / 4);

function completion(body: Record<string, unknown>, step: ScriptStep, content: string | null): Record<string, unknown> {
  const requested = typeof body["model"] === "string" ? body["model"] : "unknown";
  const prompt = JSON.stringify(body["messages"] ?? []);
  return {
    id: step.id ?? `chatcmpl-fake-${Date.now().toString(36)}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: step.model ?? `${requested}-fake`,
    choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, finish_reason: step.finishReason ?? "stop", logprobs: null }],
    usage: {
      ...(step.usage ?? { prompt_tokens: tokens(prompt), completion_tokens: tokens(content ?? "") }),
      total_tokens: (step.usage?.prompt_tokens ?? tokens(prompt)) + (step.usage?.completion_tokens ?? tokens(content ?? "")),
    },
  };
}

function errorBody(status: number, message = `fake provider answered ${status}`): Record<string, unknown> {
  const type = status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error";
  return { error: { message, type, code: type, param: null } };
}

export async function startFakeOpenAi(options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> {
  const summaryChars = options.summaryChars ?? 120;
  const calls: ModelCall[] = [];
  /** Slices the flaky model already failed once: the retry of the same packet succeeds. */
  const failedOnce = new Set<string>();
  let held = 0;
  const sessions = new Map<string, Session>();
  const sessionOf = (name: string): Session => {
    let session = sessions.get(name);
    if (session === undefined) {
      session = { script: [], requests: [], held: [] };
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
    if (request.method === "GET" && path === "/__held") return send(response, 200, session.held.map((h) => h.name));
    if (request.method === "POST" && path === "/__release") {
      const body = parseJson(text);
      const name = isRecord(body) && typeof body["hold"] === "string" ? body["hold"] : undefined;
      if (name === undefined) return send(response, 400, { error: "the body names the hold: { \"hold\": name }" });
      for (const held of session.held.filter((h) => h.name === name)) held.release();
      return send(response, 204, "");
    }
    if (request.method === "POST" && path === "/__reset") {
      for (const held of [...session.held]) held.release();
      session.script = [];
      session.requests = [];
      return send(response, 204, "");
    }
    if (request.method !== "POST" || path !== "/v1/chat/completions") return send(response, 404, errorBody(404));

    const body = parseJson(text);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    session.requests.push({ method: request.method, path, headers, body });

    const system = systemText(body);
    const index = session.script.findIndex((candidate) => candidate.whenSystemIncludes === undefined || system.includes(candidate.whenSystemIncludes));
    const step = index === -1 ? {} : (session.script.splice(index, 1)[0] ?? {});
    const delay = step.delayMs ?? options.delayMs;
    if (delay !== undefined && delay > 0) {
      held += 1;
      // A client that gave up (timeout) closes the socket; stop waiting for it.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        response.on("close", () => {
          clearTimeout(timer);
          resolve();
        });
      });
      held -= 1;
    }
    if (step.hold !== undefined) {
      const name = step.hold;
      held += 1;
      // Released by the test, or given up on by the client (its timeout closes the socket).
      await new Promise<void>((resolve) => {
        const entry = {
          name,
          release: () => {
            session.held = session.held.filter((h) => h !== entry);
            resolve();
          },
        };
        session.held.push(entry);
        response.on("close", entry.release);
      });
      held -= 1;
    }
    // Like a real endpoint: a request without a key or without the required fields is refused.
    if (!(headers["authorization"] ?? "").startsWith("Bearer ")) return send(response, 401, errorBody(401));
    if (!isRecord(body) || typeof body["model"] !== "string" || !Array.isArray(body["messages"])) return send(response, 400, errorBody(400));
    const call = callOf(body);
    calls.push(call);
    if (call.model === FLAKY_MODEL && call.process === "compactor" && step.status === undefined && !failedOnce.has(call.sliceKey)) {
      failedOnce.add(call.sliceKey);
      call.status = 500;
      return send(response, 500, errorBody(500));
    }
    const status = step.status ?? 200;
    call.status = status;
    if (status !== 200) return send(response, status, errorBody(status, step.errorMessage), step.retryAfter === undefined ? {} : { "retry-after": String(step.retryAfter) });
    if (step.rawBody !== undefined) return send(response, 200, step.rawBody);
    const content = step.content === undefined ? defaultContent(body, summaryChars) : step.content;
    call.replyChars = content?.length ?? 0;
    return send(response, 200, completion(body, step, content));
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => send(response, 500, { error: String(error) }));
  });
  // Loopback only: the fake is reachable from this machine and nowhere else.
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    baseUrl: `${origin}/v1`,
    calls,
    inFlight: () => held,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error === undefined ? resolve() : reject(error)));
      }),
  };
}
