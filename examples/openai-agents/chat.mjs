// An OpenAI Agents SDK run whose session is a Foldline conversation (docs/CLIENT.md, "The OpenAI
// Agents SDK").
//
//   FOLDLINE_URL=http://127.0.0.1:8787 FOLDLINE_TOKEN=fl_… \
//   OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… MODEL=gpt-5-mini \
//   npm run chat -- "We meet in Lisbon on Friday." "When do we meet?"
//
// Each argument is one message from Ada in the conversation `api:openai-agents-example:chat-1` (or
// CONVERSATION), run through the agent with `FoldlineSession` as its session: the run reads the
// agent's verified context (summary, amendments, exact tail) as its history, and what was said, the
// message and the answer, is recorded in the log. Run it again later: the conversation goes on.
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import { createClient } from "foldline/client";
import { FoldlineSession } from "foldline/openai-agents";

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`set ${name}`);
  return value;
};

// Traces stay on this machine: the SDK would otherwise export them to OpenAI.
setTracingDisabled(true);
const client = createClient({ baseUrl: env("FOLDLINE_URL", "http://127.0.0.1:8787"), token: env("FOLDLINE_TOKEN") });
const conversation = env("CONVERSATION", "api:openai-agents-example:chat-1");
const agentId = env("AGENT", "helper");
const model = env("MODEL", "gpt-5-mini");

// The agent and its compactor: registering the same declaration again changes nothing.
const shared = { enabled: true, provider: { profile: "default", model }, sources: [conversation], admitSensitive: true, historyAgents: [agentId], documents: [], documentBudgetChars: 4000 };
await client.registerAgent(agentId, {
  agent: { id: agentId, compactorId: `${agentId}.compactor`, ...shared },
  compactor: { id: `${agentId}.compactor`, targetId: agentId, ...shared, policy: { triggerInputChars: 6000, retainInputChars: 3000, maxFrozenChars: 12000 }, outputMode: "projection" },
});

const openai = new OpenAI({ baseURL: env("OPENAI_BASE_URL"), apiKey: process.env.OPENAI_API_KEY ?? "" });
const helper = new Agent({ name: agentId, instructions: "You are the team's assistant. Answer briefly.", model: new OpenAIChatCompletionsModel(openai, model) });
const session = new FoldlineSession({ client, conversation, agent: agentId, author: { id: "u:ada", name: "Ada" } });

for (const text of process.argv.slice(2)) {
  const result = await run(helper, text, { session });
  process.stdout.write(`Ada: ${text}\n${agentId}: ${result.finalOutput}\n`);
}
