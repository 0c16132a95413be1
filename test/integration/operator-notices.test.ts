import { env } from "cloudflare:workers";
import { opsText } from "../../src/core/ops-text";
import { describe, expect, inject, it } from "vitest";
import type { Incident } from "../../src/incidents";
import { incidentNotice } from "../../src/incidents";
import { consumeBatch } from "../../src/queue/consumer";
import { createMessageBatch } from "cloudflare:test";

/** The operator's chat: incident summaries, never an agent failure echoed into its own chat. */

const withOperator = (operatorChat: string, extra: Record<string, string> = {}): Env => ({ ...env, OPERATOR_CHAT: operatorChat, ...extra }) as Env;

const incident = (overrides: Partial<Incident>): Incident => ({
  conversationId: "telegram:7001:42",
  agentId: "concierge",
  runId: "cmp_1",
  kind: "plan_failure",
  code: "tail_group_too_large",
  message: opsText`the newest group has 90000 characters`,
  createdAt: "2026-11-30T00:00:00.000Z",
  ...overrides,
});

describe("incident summaries for the operator", () => {
  it("summarizes an incident with codes and ids, for the configured chat", () => {
    const notice = incidentNotice(withOperator("7001:-100555"), incident({}));
    expect(notice).toEqual({
      type: "notice",
      botId: "7001",
      chatId: -100555,
      text: "Foldline incident: plan_failure tail_group_too_large — agent concierge in telegram:7001:42 (run cmp_1)",
    });
    expect(notice?.text).not.toContain("90000 characters");
  });

  it("never duplicates an agent-run failure into the chat where it happened", () => {
    const operator = withOperator("7001:42");
    expect(incidentNotice(operator, incident({ kind: "agent_failure", code: "model_timeout" }))).toBeUndefined();
    expect(incidentNotice(operator, incident({ kind: "delivery_failure", code: "forbidden", conversationId: "telegram:7001:42:9" }))).toBeUndefined();
    expect(incidentNotice(operator, incident({ kind: "agent_failure", conversationId: "telegram:7001:43" }))?.chatId).toBe(42);
  });

  it("never posts any incident summary into the chat the incident concerns, whatever its kind, topic or bot", () => {
    const operator = withOperator("7001:42");
    const kinds = ["compactor_failure", "compactor_abandoned", "plan_failure", "resolver_failure", "agent_failure", "delivery_failure"] as const;
    for (const kind of kinds) {
      // The chat itself, one of its forum topics, and the same chat seen through another bot
      // (Telegram chat ids are global, so that is the same room).
      for (const conversationId of ["telegram:7001:42", "telegram:7001:42:9", "telegram:7002:42"]) {
        expect(incidentNotice(operator, incident({ kind, conversationId })), `${kind} in ${conversationId}`).toBeUndefined();
      }
      expect(incidentNotice(operator, incident({ kind, conversationId: "telegram:7001:420" }))?.chatId, `${kind} elsewhere`).toBe(42);
      expect(incidentNotice(operator, incident({ kind, conversationId: "api:acme:42" }))?.chatId, `${kind} from an API source`).toBe(42);
    }
  });

  it("names the conversation's own bookkeeping for an incident of no agent", () => {
    const notice = incidentNotice(withOperator("7001:-100555"), incident({ agentId: null, runId: null, kind: "wake_failure", code: "catch_up" }));
    expect(notice?.text).toBe("Foldline incident: wake_failure catch_up — the conversation's own bookkeeping in telegram:7001:42");
  });

  it("sends nothing without an operator chat", () => {
    expect(incidentNotice(withOperator(""), incident({}))).toBeUndefined();
    expect(incidentNotice(withOperator("not-a-chat"), incident({}))).toBeUndefined();
  });

  it("delivers a queued notice through the Bot API", async () => {
    const session = `${inject("fakeTelegramOrigin")}/s/${crypto.randomUUID()}`;
    const notice = incidentNotice(withOperator("7001:-100555"), incident({}));
    const batch = createMessageBatch("foldline-compaction", [{ id: "n1", timestamp: new Date(), attempts: 1, body: notice }]);
    await consumeBatch(batch, withOperator("7001:-100555", { TELEGRAM_API_BASE_URL: session }));
    const requests = (await (await fetch(`${session}/__requests`)).json()) as { body: { chat_id: number; text: string } }[];
    expect(requests.map((r) => [r.body.chat_id, r.body.text])).toEqual([[-100555, notice?.text]]);
  });
});
