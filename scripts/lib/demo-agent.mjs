// The demo agent and its reciprocal compactor, registered through the public API exactly as an
// operator would (README "Compaction in five calls"). Registering is idempotent: the same pair
// answers 200 `unchanged`, so `npm start` and `npm run demo` may both call it every time.
import { DEMO_BOT_ID } from "./local-state.mjs";

export const DEMO_AGENT_ID = "concierge";
export const DEMO_COMPACTOR_ID = `${DEMO_AGENT_ID}.compactor`;

/**
 * A small policy, so a conversation of a few thousand characters compacts several times; a real
 * deployment keeps the contract's defaults (trigger 80,000, retain 40,000).
 */
export const DEMO_POLICY = {
  triggerInputChars: 1_600,
  retainInputChars: 600,
  maxFrozenEvents: 2_000,
  maxFrozenChars: 3_200,
  maxSummaryChars: 700,
};

const IDENTITY = [
  "You are Concierge, the assistant of a small product team, in their Telegram chat.",
  "You help them plan their offsite: dates, venue, travel, food, agenda.",
  "Answer briefly. When a decision is made, restate it in one line so the team can confirm it.",
].join("\n");

/**
 * @param {string} baseUrl
 * @param {string} token a token with `agent:concierge` (the local token has `agent:*`)
 * @param {{ model?: string }} [options]
 * @returns {Promise<{ status: "created" | "unchanged", revision: number, epochId: string }>}
 */
export async function registerDemoAgent(baseUrl, token, { model = "gpt-4o-mini" } = {}) {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const uploaded = await fetch(`${baseUrl}/v1/agents/${DEMO_AGENT_ID}/documents/identity`, {
    method: "PUT",
    headers,
    body: JSON.stringify({ content: IDENTITY }),
  });
  if (!uploaded.ok) throw new Error(`uploading the demo identity document: HTTP ${uploaded.status} ${await uploaded.text()}`);
  const { hash } = /** @type {{ hash: string }} */ (await uploaded.json());

  const shared = {
    enabled: true,
    provider: { profile: "default", model },
    sources: [`telegram:${DEMO_BOT_ID}:*`],
    // Boundaries summarize whatever history held, so they are always sensitive: an agent that is
    // served them must admit sensitive content.
    admitSensitive: true,
    historyAgents: [DEMO_AGENT_ID],
    documents: [{ name: "identity", hash }],
    documentBudgetChars: 4_000,
  };
  const registration = {
    agent: { id: DEMO_AGENT_ID, compactorId: DEMO_COMPACTOR_ID, ...shared },
    compactor: { id: DEMO_COMPACTOR_ID, targetId: DEMO_AGENT_ID, ...shared, policy: DEMO_POLICY, outputMode: "projection" },
  };
  const response = await fetch(`${baseUrl}/v1/agents/${DEMO_AGENT_ID}`, { method: "PUT", headers, body: JSON.stringify(registration) });
  const text = await response.text();
  if (response.status !== 200 && response.status !== 201) throw new Error(`registering the demo agent: HTTP ${response.status} ${text}`);
  const body = JSON.parse(text);
  return { status: response.status === 201 ? "created" : "unchanged", revision: body.revision, epochId: body.epoch.id };
}
