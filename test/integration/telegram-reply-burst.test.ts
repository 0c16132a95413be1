import { describe, expect, inject, it } from "vitest";
import { FAILURE_NOTICE } from "../../src/queue/reply-notice";
import { pair } from "../support/declarations";
import { waitFor } from "../support/chain";
import { BOT_ID, call, eventsPath, json, textUpdate, tokenFor, webhook } from "./helpers";

/**
 * A burst through the real webhook: each reply answers the message it replies to, composed from
 * the conversation as it stood at that message. Two built-in agents serve the chat: the offline
 * reply agent (its reply quotes the last user message of its request, so the recorded proposal
 * shows what it answered) and one on the fake model endpoint (profile "fake"; its requests are
 * recorded there and told apart from other files' by a model name of this test's own).
 */

interface LogEvent {
  seq: number;
  kind: string;
  body: { agentId?: string; text?: string; replyToMessageId?: string; messageId?: string };
}
interface RecordedRequest {
  body: { model?: string; messages?: { role: string; content: string }[] };
}

const modelRequests = async (model: string): Promise<RecordedRequest[]> =>
  ((await (await fetch(`${new URL(inject("fakeOpenAiBaseUrl")).origin}/__requests`)).json()) as RecordedRequest[]).filter((r) => r.body.model === model);

describe("replies to a burst of Telegram messages", () => {
  it("answers each of three messages posted 300 ms apart as of that message, never the newest three times", async () => {
    const chat = 5_500_001;
    const conversation = `telegram:${BOT_ID}:${chat}`;
    const model = `burst-${crypto.randomUUID()}`;
    const token = await tokenFor(conversation, "agent:burst-offline", "agent:burst-model");
    for (const [agentId, profile] of [["burst-offline", "default"], ["burst-model", "fake"]] as const) {
      const base = pair({ agentId, sources: [conversation], trigger: 50_000, admitSensitive: true, profile, model: profile === "fake" ? model : "test-model" });
      const body = { agent: { ...base.agent, reply: { mode: "builtin" } }, compactor: base.compactor };
      expect((await call("PUT", `/v1/agents/${agentId}`, { token, body })).status).toBeLessThan(300);
    }

    const texts = ["First: is the venue in Lisbon confirmed?", "Second: who books the flights?", "Third: what is the budget per person?"];
    const updates = texts.map((text, i) => textUpdate(880_000 + i, chat, text));
    for (const [i, update] of updates.entries()) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await webhook(update)).status).toBe(200);
    }
    const messageIds = updates.map((u) => String(u.message.message_id));

    const events = await waitFor(async () => {
      const all = (await json<{ events: LogEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=200`, { token }))).events;
      return all.filter((e) => e.kind === "proposal").length >= 6 ? all : undefined;
    }, "a reply of each agent to each message");
    const proposals = events.filter((e) => e.kind === "proposal");
    expect(proposals.map((p) => p.body.text)).not.toContain(FAILURE_NOTICE);

    // The offline agent quotes what it answered: message k, and nothing later.
    for (const [k, messageId] of messageIds.entries()) {
      const answer = proposals.filter((p) => p.body.agentId === "burst-offline" && p.body.replyToMessageId === messageId);
      expect(answer, `offline reply to message ${k + 1}`).toHaveLength(1);
      expect(answer[0]?.body.text).toContain(texts[k]);
      for (const later of texts.slice(k + 1)) expect(answer[0]?.body.text).not.toContain(later);
    }
    const offlineTexts = proposals.filter((p) => p.body.agentId === "burst-offline").map((p) => p.body.text);
    expect(new Set(offlineTexts).size).toBe(3);

    // Each model request ends at its own message and shows no later one.
    expect(proposals.filter((p) => p.body.agentId === "burst-model").map((p) => p.body.replyToMessageId).sort()).toEqual([...messageIds].sort());
    const requests = await modelRequests(model);
    expect(requests).toHaveLength(3);
    const endings = requests.map((r) => {
      const messages = r.body.messages ?? [];
      const last = messages.at(-1);
      expect(last?.role).toBe("user");
      const k = texts.findIndex((t) => last?.content.endsWith(t) === true);
      expect(k, `request ending ${JSON.stringify(last?.content)}`).toBeGreaterThanOrEqual(0);
      const shown = messages.map((m) => m.content).join("\n");
      for (const later of texts.slice(k + 1)) expect(shown).not.toContain(later);
      for (const earlier of texts.slice(0, k)) expect(shown).toContain(earlier);
      return k;
    });
    expect(endings.sort()).toEqual([0, 1, 2]);
  });
});
