import { z } from "zod";
import { agentIdSchema, MAX_TEXT_CHARS } from "./events";
import { recallQueryTextSchema } from "./recall";
import type { TrustedDocument } from "./packet";
import type { NativeMessage } from "./render";

/**
 * Composition: one OpenAI chat-completions request body for the agent's next turn. Trusted
 * identity/memory documents are the only system content; history (summary envelopes as user
 * messages, then exact turns) follows; the current prompt, with its images, comes last.
 */

const imageUrl = z
  .string()
  .max(8_000_000)
  .refine((url) => /^https:\/\//.test(url) || /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$/.test(url), {
    message: "an https URL or a base64 data URL of a png, jpeg, gif or webp image",
  });

export const composeRequestSchema = z.strictObject({
  agent: agentIdSchema,
  prompt: z.strictObject({
    text: z.string().max(MAX_TEXT_CHARS).refine((s) => s.isWellFormed(), "unpaired surrogate"),
    images: z.array(z.strictObject({ url: imageUrl, detail: z.enum(["auto", "low", "high"]).optional() })).max(8).default([]),
  }),
  /** What recalled memory is searched with; absent: the prompt's text. Free text, never search syntax. */
  query: recallQueryTextSchema.optional(),
});
export type ComposeRequest = z.infer<typeof composeRequestSchema>;

export type { TrustedDocument } from "./packet";

type ContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high" } };

export interface ChatRequest {
  readonly model: string;
  readonly messages: readonly ({ role: "system" | "user" | "assistant"; content: string } | { role: "user"; content: ContentPart[] })[];
}

export function renderDocuments(documents: readonly TrustedDocument[]): string {
  const blocks = documents.map((d) => `<document name="${d.name}" sha256="${d.hash}">\n${d.content}\n</document>`);
  return ["Trusted identity and memory documents of this agent:", ...blocks].join("\n\n");
}

/** `prompt` absent: the history already ends with the message to answer (the built-in reply agent). */
export function buildChatRequest(model: string, documents: readonly TrustedDocument[], history: readonly NativeMessage[], prompt?: ComposeRequest["prompt"]): ChatRequest {
  const system = documents.length === 0 ? [] : [{ role: "system" as const, content: renderDocuments(documents) }];
  // History never speaks as system: only trusted documents do (envelopes and turns are user/assistant).
  const past = history.map((m) => ({ role: m.role === "system" ? ("user" as const) : m.role, content: m.content }));
  return { model, messages: [...system, ...past, ...(prompt === undefined ? [] : [promptMessage(prompt)])] };
}

function promptMessage(prompt: ComposeRequest["prompt"]): ChatRequest["messages"][number] {
  if (prompt.images.length === 0) return { role: "user", content: prompt.text };
  return {
    role: "user",
    content: [
      ...(prompt.text === "" ? [] : [{ type: "text" as const, text: prompt.text }]),
      ...prompt.images.map((image) => ({
        type: "image_url" as const,
        image_url: image.detail === undefined ? { url: image.url } : { url: image.url, detail: image.detail },
      })),
    ],
  };
}
