/**
 * A chat on the Cloudflare Agents SDK whose memory is Foldline's (README.md beside this file).
 *
 * Each conversation is a Durable Object with the SDK's Sessions installed, as the SDK documents
 * them. `mirrorToFoldline` records every write of its session in the Foldline conversation of the
 * same name (a user message as the person's, an assistant message as the agent's delivered reply);
 * the model is called with `foldlineMessages`, the agent's verified context, instead of the
 * session's transcript, so the prompt stays bounded however long the chat runs.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText } from "ai";
import { Lifecycle } from "agents/lifecycle";
import { Sessions } from "agents/sessions";
import { DurableObject } from "cloudflare:workers";
import { createClient } from "foldline/client";
import type { FoldlineBinding } from "foldline/client";
import { catchUp, foldlineMessages, mirrorToFoldline } from "foldline/agents";
import type { FoldlineMirrorOptions } from "foldline/agents";

interface Env {
  readonly CHAT: DurableObjectNamespace<Chat>;
  /** Foldline's RPC entrypoint (wrangler.toml, `services`). */
  readonly FOLDLINE: FoldlineBinding;
  readonly FOLDLINE_TOKEN: string;
  readonly AGENT_ID: string;
  readonly OPENAI_BASE_URL: string;
  readonly OPENAI_API_KEY: string;
  readonly MODEL: string;
}

export class Chat extends DurableObject<Env> {
  readonly sessions = new Sessions();
  readonly lifecycle = Lifecycle.install(this).use(this.sessions);
  readonly session = this.sessions.session();
  #mirror: FoldlineMirrorOptions | undefined;

  /** Mirrors this object's session into `conversation` (once per instance), catching up what a failed mirror missed. */
  async #mirrored(conversation: string): Promise<FoldlineMirrorOptions> {
    if (this.#mirror === undefined) {
      const client = createClient({ binding: this.env.FOLDLINE, token: this.env.FOLDLINE_TOKEN });
      this.#mirror = { client, conversation, agent: this.env.AGENT_ID, author: () => ({ id: "u:guest", name: "Guest" }) };
      // What an earlier instance wrote and did not mirror first, then every write from here on.
      await catchUp(this.session, this.#mirror);
      mirrorToFoldline(this.sessions, this.#mirror);
    }
    return this.#mirror;
  }

  async answer(conversation: string, text: string): Promise<string> {
    const mirror = await this.#mirrored(conversation);
    await this.session.appendMessage({ id: crypto.randomUUID(), role: "user", parts: [{ type: "text", text }] });
    const provider = createOpenAICompatible({ name: "model", baseURL: this.env.OPENAI_BASE_URL, apiKey: this.env.OPENAI_API_KEY });
    const result = await generateText({
      model: provider.chatModel(this.env.MODEL),
      system: "You are a helpful assistant in a long-running chat. Answer briefly.",
      messages: await foldlineMessages({ ...mirror, query: text }),
    });
    await this.session.appendMessage({ id: crypto.randomUUID(), role: "assistant", parts: [{ type: "text", text: result.text }] });
    return result.text;
  }
}

export default {
  /** POST /chat/<name> with the message as the body: the assistant's answer. */
  async fetch(request: Request, env: Env): Promise<Response> {
    const name = /^\/chat\/([\w-]{1,64})$/.exec(new URL(request.url).pathname)?.[1];
    if (request.method !== "POST" || name === undefined) return new Response("POST /chat/<name> with the message as the body\n", { status: 404 });
    const text = (await request.text()).trim();
    if (text === "" || text.length > 4_096) return new Response("a message of 1–4,096 characters\n", { status: 400 });
    const answer = await env.CHAT.get(env.CHAT.idFromName(name)).answer(`api:agents-example:${name}`, text);
    return new Response(`${answer}\n`);
  },
} satisfies ExportedHandler<Env>;
