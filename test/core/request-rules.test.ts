import { describe, expect, it } from "vitest";
import type { ReplyMode } from "../../src/core/declarations";
import { isReplySecretName, replySchema, replySecretRefusal } from "../../src/core/declarations";
import type { EventInput } from "../../src/core/events";
import { appendBatchRequestSchema, appendEventRequestSchema, reservedForFoldline } from "../../src/core/events";
import { jobSchema } from "../../src/core/jobs";
import { UNSAFE_MESSAGE } from "../../src/core/names";
import { run, source } from "./event-builders";

/**
 * The rules a client's request meets before anything is written: where an `http` bot may live and
 * which secret it may name, which free-form ids may not hide a control or bidi character, what only
 * Foldline itself may record, and the shape of every queued job.
 */

describe("an http bot's URL", () => {
  const accepts = (url: string) => replySchema.safeParse({ mode: "http", url, secret: "BOT_HMAC_A" }).success;

  it("is https anywhere, or plain http on the loopback only", () => {
    expect(accepts("https://bots.example.com/reply")).toBe(true);
    expect(accepts("http://127.0.0.1:8787/reply")).toBe(true);
    expect(accepts("http://localhost:8787/reply")).toBe(true);
    expect(accepts("http://bots.example.com/reply")).toBe(false);
    expect(accepts("ftp://127.0.0.1/reply")).toBe(false);
  });

  it("carries no credentials and must parse", () => {
    expect(accepts("https://user@bots.example.com/reply")).toBe(false);
    expect(accepts("https://:secret@bots.example.com/reply")).toBe(false);
    expect(accepts("https://user:secret@bots.example.com/reply")).toBe(false);
    expect(accepts("bots.example.com/reply")).toBe(false);
  });
});

describe("an http bot's secret", () => {
  const http = (secret: string): ReplyMode => ({ mode: "http", url: "https://bots.example.com", secret, timeoutMs: 5_000 });

  it("names a Worker secret in the BOT_HMAC_ namespace only", () => {
    expect(isReplySecretName("BOT_HMAC_SUPPORT_1")).toBe(true);
    expect(isReplySecretName("OPENAI_API_KEY")).toBe(false);
    expect(replySecretRefusal(http("BOT_HMAC_SUPPORT"))).toBeUndefined();
    expect(replySecretRefusal({ mode: "builtin" })).toBeUndefined();
    expect(replySecretRefusal(http("TELEGRAM_BOT_TOKEN_1"))).toEqual({
      code: "secret_outside_namespace",
      message: "agent.reply.secret: name a Worker secret BOT_HMAC_<NAME> (A-Z, 0-9, _); model keys, webhook secrets and bot tokens can never be named",
      details: { field: "agent.reply.secret" },
    });
  });
});

describe("free-form ids of a client's event", () => {
  const BIDI = "file\u202eexe";
  const issues = (event: unknown) => {
    const parsed = appendEventRequestSchema.safeParse(event);
    return parsed.success ? [] : parsed.error.issues.map((i) => [i.path.join("."), i.code, i.message, (i as { params?: unknown }).params]);
  };
  const unsafe = (path: string) => [[path, "custom", UNSAFE_MESSAGE, { code: "unsafe_characters" }]];
  const withAttachment = (attachment: object): EventInput => {
    const event = source("m1", "a photo");
    return { ...event, body: { ...event.body, attachments: [{ type: "photo", fileId: "f1", fileUniqueId: "u1" }, { type: "photo", ...attachment }] } } as EventInput;
  };
  const withRun = (body: object): EventInput => {
    const event = run("r1", "helper", { key: "agent:r1" });
    return { ...event, body: { ...event.body, ...body } } as EventInput;
  };

  it("refuse a control or bidi character in the author's id and username, by path", () => {
    expect(issues(source("m1", "hi", { author: { id: "u1", name: "Ada", username: "ada" } }))).toEqual([]);
    expect(issues(source("m1", "hi", { author: { id: BIDI, name: "Ada" } }))).toEqual(unsafe("body.author.id"));
    expect(issues(source("m1", "hi", { author: { id: "u1", username: BIDI } }))).toEqual(unsafe("body.author.username"));
  });

  it("refuse a control or bidi character in attachment file ids, by path", () => {
    expect(issues(withAttachment({ fileId: "f2", fileUniqueId: "u2" }))).toEqual([]);
    expect(issues(withAttachment({ fileId: BIDI }))).toEqual(unsafe("body.attachments.1.fileId"));
    expect(issues(withAttachment({ fileUniqueId: BIDI }))).toEqual(unsafe("body.attachments.1.fileUniqueId"));
  });

  it("refuse one in a run's model and error code, by path", () => {
    expect(issues(withRun({ model: "gpt-test", status: "failed", error: { code: "timeout", message: "slow" } }))).toEqual([]);
    expect(issues(withRun({ model: BIDI }))).toEqual(unsafe("body.model"));
    expect(issues(withRun({ status: "failed", error: { code: BIDI, message: "slow" } }))).toEqual(unsafe("body.error.code"));
    expect(appendBatchRequestSchema.safeParse({ events: [withRun({ model: BIDI })] }).success).toBe(false);
  });
});

describe("reservedForFoldline", () => {
  it("keeps compactor runs and Foldline's own idempotency namespaces from clients", () => {
    const compactorRun: EventInput = { kind: "run", idempotencyKey: "mine:1", sensitive: false, body: { runId: "r1", agentId: "helper.compactor", role: "compactor", status: "completed" } };
    expect(reservedForFoldline(compactorRun)).toBe("compactor runs are recorded by Foldline only");
    expect(reservedForFoldline(run("r1", "helper", { key: "mine:1" }))).toBeUndefined();
    expect(reservedForFoldline(source("m1", "hi", { key: "my-run:1" }))).toBeUndefined();
    for (const key of ["run:1", "tg:1", "reply:1", "dispatch:1"]) {
      expect(reservedForFoldline(source("m1", "hi", { key }))).toBe("idempotency keys starting with run:, tg:, reply: or dispatch: are reserved");
    }
  });
});

describe("jobSchema", () => {
  const compaction = {
    type: "compaction",
    conversationId: "telegram:1:-100",
    agentId: "helper",
    runId: "cmp_00000000-0000-4000-8000-000000000000",
    packetKey: "packets/p.json",
    packetHash: "a".repeat(64),
    model: "gpt-test",
    profile: "default",
  };

  it("accepts each kind of job the queue carries, and nothing else", () => {
    expect(jobSchema.parse(compaction)).toEqual(compaction);
    const reply = { type: "reply", conversationId: "c", agentId: "helper", sourceSeq: 3, sourceMessageId: "m3" };
    expect(jobSchema.parse(reply)).toEqual(reply);
    const notice = { type: "notice", botId: "123", chatId: -100, text: "compaction_stalled helper" };
    expect(jobSchema.parse(notice)).toEqual(notice);
    expect(jobSchema.safeParse({ ...compaction, type: "other" }).success).toBe(false);
    expect(jobSchema.safeParse({ ...compaction, runId: "cmp_x" }).success).toBe(false);
    expect(jobSchema.safeParse({ ...compaction, extra: 1 }).success).toBe(false);
    expect(jobSchema.safeParse({ ...reply, sourceSeq: 0 }).success).toBe(false);
    expect(jobSchema.safeParse({ ...notice, text: "" }).success).toBe(false);
  });
});
