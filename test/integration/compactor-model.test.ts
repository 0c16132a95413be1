import { env } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { compactorMessages } from "../../src/core/compactor-input";
import { PROJECTION_JSON_SCHEMA, validateCompactorOutput } from "../../src/core/compactor-output";
import { OFFLINE_COMPACTOR, offlineCompaction } from "../../src/core/offline-summarizer";
import { runCompactorModel } from "../../src/model/compactor-model";
import type { ScriptStep } from "../fake-openai/server";
import { packetFixture } from "../support/packet-fixture";

/**
 * The model adapter against the loopback fake OpenAI-compatible server (test/fake-openai): the real
 * `openai` SDK, real HTTP, nothing patched. Each test uses a session of its own on the fake, so
 * its script and recorded requests are its own even while other files run.
 */

const fakeBaseUrl = inject("fakeOpenAiBaseUrl");
const fakeOrigin = new URL(fakeBaseUrl).origin;

interface Recorded {
  readonly headers: Record<string, string>;
  readonly body: { readonly [key: string]: unknown };
}

interface FakeSession {
  readonly baseUrl: string;
  script(steps: readonly ScriptStep[]): Promise<void>;
  requests(): Promise<Recorded[]>;
}

function fakeSession(): FakeSession {
  const root = `${fakeOrigin}/s/${crypto.randomUUID()}`;
  return {
    baseUrl: `${root}/v1`,
    async script(steps) {
      const response = await fetch(`${root}/__script`, { method: "POST", body: JSON.stringify(steps) });
      expect(response.status).toBe(204);
    },
    async requests() {
      const response = await fetch(`${root}/__requests`);
      return (await response.json()) as Recorded[];
    },
  };
}

/**
 * The Env a deployment with a key would have. `wrangler types` narrows each var to its
 * wrangler.toml literal; at runtime a var is any string, so the test widens them here.
 */
function modelEnv(vars: { readonly OPENAI_BASE_URL: string; readonly OPENAI_API_KEY?: string; readonly MODEL_TIMEOUT_MS?: string; readonly MODEL_MAX_RETRIES?: string }): Env {
  return { ...env, OPENAI_API_KEY: "test-key", MODEL_MAX_RETRIES: "0", ...vars } as Env;
}

const MODEL = "gpt-test-compactor";

describe("runCompactorModel against an OpenAI-compatible endpoint", () => {
  it("returns the text with the usage, response id and model the provider reported", async () => {
    const fake = fakeSession();
    const content = JSON.stringify({ summary: "@ada chose vendor B; @bob drafts the contract.", salientFacts: { openThreads: ["@bob asked about the Berlin office"] } });
    await fake.script([{ content, usage: { prompt_tokens: 812, completion_tokens: 37 }, model: "gpt-test-compactor-2026-11-01", id: "chatcmpl-abc123" }]);
    const packet = packetFixture();

    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packet, MODEL);

    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value).toMatchObject({
      provider: "openai-compatible",
      model: "gpt-test-compactor-2026-11-01",
      responseId: "chatcmpl-abc123",
      finishReason: "stop",
      usage: { inputTokens: 812, outputTokens: 37 },
      text: content,
    });
    expect(result.value.latencyMs).toBeGreaterThanOrEqual(0);
    // The receipt's text is what the validator then accepts.
    expect(validateCompactorOutput(packet, result.value).ok).toBe(true);
  });

  it("sends the model, temperature 0, a token bound, the two compactor messages, the key, and no tools", async () => {
    const fake = fakeSession();
    const packet = packetFixture({ policy: { maxSummaryChars: 1_000 } });

    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packet, MODEL);

    expect(result.ok).toBe(true);
    const requests = await fake.requests();
    expect(requests).toHaveLength(1);
    const [request] = requests;
    expect(request?.headers["authorization"]).toBe("Bearer test-key");
    expect(request?.body["model"]).toBe(MODEL);
    expect(request?.body["temperature"]).toBe(0);
    expect(request?.body["max_completion_tokens"]).toBe(756);
    expect(request?.body).not.toHaveProperty("tools");
    expect(request?.body).not.toHaveProperty("tool_choice");
    expect(request?.body).not.toHaveProperty("stream");
    const messages = request?.body["messages"] as { role: string; content: string }[];
    expect(messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(messages[0]?.content).toBe(packet.prompt);
    expect(messages[1]?.content).toContain("<slice>");
  });

  it("asks for the projection's JSON schema as structured output, unless the profile turns it off", async () => {
    const fake = fakeSession();
    const packet = packetFixture();
    await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packet, MODEL);
    await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packetFixture({ outputMode: "plain" }), MODEL);
    await runCompactorModel({ ...modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), OPENAI_STRUCTURED_OUTPUT: "off" } as unknown as Env, packet, MODEL);
    const [projection, plain, switchedOff] = await fake.requests();
    expect(projection?.body["response_format"]).toEqual({ type: "json_schema", json_schema: { name: "session_projection", strict: true, schema: PROJECTION_JSON_SCHEMA } });
    // Plain mode has no shape to ask for, and an endpoint without json_schema support is not sent one.
    expect(plain?.body).not.toHaveProperty("response_format");
    expect(switchedOff?.body).not.toHaveProperty("response_format");
  });

  it("tells the model why its last reply was refused, after the same two messages, when given a repair turn", async () => {
    const fake = fakeSession();
    const packet = packetFixture();
    await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packet, MODEL, "default", { reply: "Sure! Here is the summary.", problem: "the reply is not a single JSON object" });
    const [request] = await fake.requests();
    const messages = request?.body["messages"] as { role: string; content: string }[];
    expect(messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(messages.slice(0, 2)).toEqual(compactorMessages(packet));
    expect(messages[2]?.content).toBe("Sure! Here is the summary.");
    expect(messages[3]?.content).toContain("the reply is not a single JSON object");
  });

  it("reports the default reply's model as the provider named it, not as requested", async () => {
    const fake = fakeSession();
    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packetFixture(), MODEL);
    expect(result.ok && result.value.model).toBe(`${MODEL}-fake`);
  });

  it("maps 429 with retry-after to rate_limited with the seconds to wait", async () => {
    const fake = fakeSession();
    await fake.script([{ status: 429, retryAfter: 2 }]);

    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packetFixture(), MODEL);

    expect(result).toMatchObject({ ok: false, error: { kind: "rate_limited", status: 429, retryAfterSeconds: 2 } });
  });

  it("maps 429 without retry-after to rate_limited with no wait hint", async () => {
    const fake = fakeSession();
    await fake.script([{ status: 429 }]);
    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packetFixture(), MODEL);
    expect(result).toMatchObject({ ok: false, error: { kind: "rate_limited", retryAfterSeconds: null } });
  });

  it.each([
    [500, "server_error"],
    [503, "server_error"],
    [400, "rejected"],
    [401, "rejected"],
    [404, "rejected"],
  ] as const)("maps HTTP %i to %s", async (status, kind) => {
    const fake = fakeSession();
    await fake.script([{ status }]);
    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packetFixture(), MODEL);
    expect(result).toMatchObject({ ok: false, error: { kind, status } });
  });

  it("retries inside the call when MODEL_MAX_RETRIES allows it", async () => {
    const fake = fakeSession();
    await fake.script([{ status: 500 }, { content: "@ada chose vendor B." }]);
    const packet = packetFixture({ outputMode: "plain" });

    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl, MODEL_MAX_RETRIES: "1" }), packet, MODEL);

    expect(result.ok && result.value.text).toBe("@ada chose vendor B.");
    expect(await fake.requests()).toHaveLength(2);
  });

  it("times out after MODEL_TIMEOUT_MS when the provider is slower", async () => {
    const fake = fakeSession();
    await fake.script([{ delayMs: 5_000 }]);
    const started = Date.now();

    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl, MODEL_TIMEOUT_MS: "300" }), packetFixture(), MODEL);

    expect(result).toMatchObject({ ok: false, error: { kind: "timeout", status: null } });
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it("maps an unreachable endpoint to network", async () => {
    // Port 9 (discard) on loopback: nothing listens there, so the connection is refused. (workerd
    // also logs the refused connection as an "uncaught exception" on stderr; that log is its own.)
    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: "http://127.0.0.1:9/v1" }), packetFixture(), MODEL);
    expect(result).toMatchObject({ ok: false, error: { kind: "network", status: null } });
  });

  it("refuses a base URL that is not http(s) without sending anything", async () => {
    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: "ftp://127.0.0.1/v1" }), packetFixture(), MODEL);
    expect(result).toMatchObject({ ok: false, error: { kind: "rejected", status: null } });
  });

  it("returns empty text for a reply without content, which the validator rejects as empty_output", async () => {
    const fake = fakeSession();
    await fake.script([{ content: null }]);
    const packet = packetFixture();

    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packet, MODEL);

    expect(result.ok && result.value.text).toBe("");
    if (!result.ok) return;
    expect(validateCompactorOutput(packet, result.value)).toMatchObject({ ok: false, error: { code: "empty_output" } });
  });

  it("returns empty text for a reply without choices", async () => {
    const fake = fakeSession();
    await fake.script([{ rawBody: JSON.stringify({ id: "chatcmpl-empty", object: "chat.completion", model: MODEL, choices: [] }) }]);
    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packetFixture(), MODEL);
    expect(result).toMatchObject({ ok: true, value: { text: "", finishReason: null, usage: null, responseId: "chatcmpl-empty" } });
  });

  it("passes finish_reason length through, so the validator can reject the cut reply", async () => {
    const fake = fakeSession();
    await fake.script([{ content: '{"summary": "@ada chose', finishReason: "length" }]);
    const packet = packetFixture();
    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fake.baseUrl }), packet, MODEL);
    expect(result.ok && result.value.finishReason).toBe("length");
    if (!result.ok) return;
    expect(validateCompactorOutput(packet, result.value)).toMatchObject({ ok: false, error: { code: "truncated_output" } });
  });
});

describe("runCompactorModel without a key", () => {
  it("runs the offline extractive compactor and says so in the receipt", async () => {
    const fake = fakeSession();
    const packet = packetFixture();
    const result = await runCompactorModel({ ...env, OPENAI_BASE_URL: fake.baseUrl } as Env, packet, MODEL);

    expect(result).toMatchObject({
      ok: true,
      value: { provider: OFFLINE_COMPACTOR.provider, model: OFFLINE_COMPACTOR.model, responseId: null, finishReason: null, usage: null },
    });
    expect(result.ok && result.value.text).toBe(offlineCompaction(packet));
    if (result.ok) expect(validateCompactorOutput(packet, result.value).ok).toBe(true);
    // No model was called.
    expect(await fake.requests()).toHaveLength(0);
  });

  it("treats an empty key as no key", async () => {
    const result = await runCompactorModel(modelEnv({ OPENAI_BASE_URL: fakeBaseUrl, OPENAI_API_KEY: "  " }), packetFixture(), MODEL);
    expect(result.ok && result.value.provider).toBe("foldline-extractive");
  });

  it("is the default of the test environment, which binds no key", async () => {
    expect(Reflect.get(env, "OPENAI_API_KEY")).toBeUndefined();
    expect(env.OPENAI_BASE_URL).toBe(fakeBaseUrl);
  });
});
