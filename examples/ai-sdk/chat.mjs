// A chat loop with the AI SDK whose memory is Foldline's (docs/CLIENT.md, "The AI SDK").
//
//   FOLDLINE_URL=http://127.0.0.1:8787 FOLDLINE_TOKEN=fl_… \
//   OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… MODEL=gpt-5-mini \
//   npm run chat -- "Where is the offsite?" "And the budget?"
//
// Each argument is one message from Ada in the conversation `api:ai-sdk-example:chat-1` (or
// CONVERSATION): it is recorded, the model is called with Foldline's verified context instead of a
// history this script keeps, and the answer is streamed, recorded as the agent's reply and, once
// shown, as delivered. Run it again later: the conversation goes on where it was, compacted.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { streamText, wrapLanguageModel } from "ai";
import { createClient } from "foldline/client";
import { foldline } from "foldline/ai-sdk";

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`set ${name}`);
  return value;
};

const client = createClient({ baseUrl: env("FOLDLINE_URL", "http://127.0.0.1:8787"), token: env("FOLDLINE_TOKEN") });
const conversation = env("CONVERSATION", "api:ai-sdk-example:chat-1");
const agent = env("AGENT", "helper");
const provider = createOpenAICompatible({ name: "model", baseURL: env("OPENAI_BASE_URL"), apiKey: process.env.OPENAI_API_KEY ?? "" });

// The agent and its compactor: registering the same declaration again changes nothing.
const shared = { enabled: true, provider: { profile: "default", model: env("MODEL", "gpt-5-mini") }, sources: [conversation], admitSensitive: true, historyAgents: [agent], documents: [], documentBudgetChars: 4000 };
await client.registerAgent(agent, {
  agent: { id: agent, compactorId: `${agent}.compactor`, ...shared },
  compactor: { id: `${agent}.compactor`, targetId: agent, ...shared, policy: { triggerInputChars: 6000, retainInputChars: 3000, maxFrozenChars: 12000 }, outputMode: "projection" },
});

for (const text of process.argv.slice(2)) {
  const messageId = `m-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const model = wrapLanguageModel({
    model: provider.chatModel(env("MODEL", "gpt-5-mini")),
    // The answer is shown as it streams: it is delivered with it.
    middleware: foldline({ client, conversation, agent, user: { messageId, author: { id: "u:ada", name: "Ada" } }, delivery: "with-answer" }),
  });
  const result = streamText({ model, system: "You are the team's assistant. Answer briefly.", prompt: text });
  process.stdout.write(`Ada: ${text}\n${agent}: `);
  for await (const delta of result.textStream) process.stdout.write(delta);
  const recorded = (await result.providerMetadata)?.foldline;
  process.stdout.write(`\n  (recorded as ${recorded?.proposalId ?? "nothing: see the error above"}, seq ${recorded?.seq ?? "-"})\n`);
}
