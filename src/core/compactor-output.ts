import { z } from "zod";
import type { Result } from "./errors";
import { ok } from "./errors";
import type { CompactionContent, Packet } from "./packet";
import { OUTPUT_CONTRACT, memoryRefSchema } from "./packet";
import { renderEnvelope } from "./render";

/**
 * The trusted parent's check of one compactor reply. The model contributes text; this module
 * decides whether that text is a usable summary and, if so, wraps it in the output contract
 * (mode, preview, auxiliary lists, degraded flag) itself. It is pure: plain data in, a `Result` out.
 *
 * The checks run from the cheapest and most certain to the most specific, and the first failure
 * wins, so one reply always maps to one code.
 */

export type CompactorOutputFailureCode =
  | "empty_output"
  | "refusal"
  | "truncated_output"
  | "output_too_long"
  | "invalid_json"
  | "invalid_shape"
  | "unknown_memory_ref"
  | "not_smaller";

export interface CompactorOutputFailure {
  readonly code: CompactorOutputFailureCode;
  readonly message: string;
}

/** Seed 001's answer for a slice with nothing worth keeping. */
export const NO_SUBSTANTIVE_CONTENT = "(no substantive content)";

/** Longest preview the contract allows (`compactionContentSchema.preview`). */
export const PREVIEW_MAX_CHARS = 280;

/** Bounds on the auxiliary lists: a reply is one bounded object, however chatty the model is. */
export const MAX_LIST_ITEMS = 50;
export const MAX_ITEM_CHARS = 500;

const listItemSchema = z.string().trim().min(1).max(MAX_ITEM_CHARS);

/** Seed 001's output shape. Strict: an unexpected field means the model did not follow the contract. */
const projectionOutputSchema = z.strictObject({
  summary: z.string().trim().min(1),
  salientFacts: z.strictObject({
    memoryRefs: z.array(memoryRefSchema).max(MAX_LIST_ITEMS).optional(),
    openThreads: z.array(listItemSchema).max(MAX_LIST_ITEMS).optional(),
    abandonedDirections: z.array(listItemSchema).max(MAX_LIST_ITEMS).optional(),
  }),
});

const failure = (code: CompactorOutputFailureCode, message: string): { readonly ok: false; readonly error: CompactorOutputFailure } => ({
  ok: false,
  error: { code, message },
});

/**
 * Openings that mark the model speaking about itself instead of summarizing: apologies, refusals,
 * disclaimers and error strings some gateways return as content with a 200.
 */
const REFUSAL_OPENING =
  /^(?:i['’]m sorry|i am sorry|sorry,? (?:but )?i |i apologi[sz]e|i can['’]t|i cannot|i can not|i['’]m unable|i am unable|i['’]m not able|i am not able|i won['’]t|as an ai|as a language model|error:)/i;
const UNABLE = /\bi(?: am|['’]m) unable to\b/i;

/**
 * A refusal, as opposed to a summary that quotes one. Openings count anywhere they begin the text;
 * "I am unable to" further in counts only inside the first sentence and only when nothing there
 * attributes it to a participant first (`@ada: I am unable to come` is history, not a refusal).
 */
export function looksLikeRefusal(text: string): boolean {
  const start = text.trimStart().replace(/^["'“‘*_>#\s]+/, "");
  if (REFUSAL_OPENING.test(start)) return true;
  const firstSentence = start.split(/(?<=[.!?])\s|\n/, 1)[0] ?? "";
  const unable = UNABLE.exec(firstSentence);
  return unable !== null && !/[@:"“]/.test(firstSentence.slice(0, unable.index));
}

/** The first line of the summary, cut at a word boundary to fit the contract's preview. */
export function derivePreview(summary: string): string {
  const firstLine = (summary.trim().split("\n", 1)[0] ?? "").trim();
  if (firstLine.length <= PREVIEW_MAX_CHARS) return firstLine;
  const room = firstLine.slice(0, PREVIEW_MAX_CHARS - 1);
  const lastSpace = room.search(/\s\S*$/);
  return `${(lastSpace > 0 ? room.slice(0, lastSpace) : room).trimEnd()}…`;
}

/** One list item on one line: a newline inside an item must not read as the next item. */
const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, " ");

/**
 * The boundary body the agent will read (inside the untrusted-history envelope): the summary, then
 * the non-empty lists, each under a fixed heading. Deterministic, so equal content renders equal
 * bytes and the boundary hash is stable.
 */
export function renderBoundaryBody(content: CompactionContent): string {
  const { memoryRefs, openThreads, abandonedDirections } = content.salientFacts;
  const blocks = [content.summary];
  if (memoryRefs.length > 0) {
    blocks.push(["Memory:", ...memoryRefs.map((r) => (r.note.trim() === "" ? `- memory:${r.path}` : `- memory:${r.path} — ${oneLine(r.note.trim())}`))].join("\n"));
  }
  if (openThreads.length > 0) blocks.push(["Open threads:", ...openThreads.map((t) => `- ${oneLine(t)}`)].join("\n"));
  if (abandonedDirections.length > 0) blocks.push(["Abandoned directions:", ...abandonedDirections.map((d) => `- ${oneLine(d)}`)].join("\n"));
  return blocks.join("\n\n");
}

type Parsed = Pick<CompactionContent, "summary" | "salientFacts" | "degraded">;

function parseProjection(packet: Packet, text: string): Result<Parsed, CompactorOutputFailure> {
  // Exactly one JSON object and nothing else: prose around it or a code fence means the model did
  // not follow the contract, and guessing which part was meant is not the parent's job.
  if (!text.startsWith("{") || !text.endsWith("}")) return failure("invalid_json", "the reply is not a single JSON object (prose or code fences around it)");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return failure("invalid_json", `the reply is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const shape = projectionOutputSchema.safeParse(value);
  if (!shape.success) {
    const issue = shape.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`;
    return failure("invalid_shape", `the reply does not have the projection shape${where}: ${issue?.message ?? "invalid"}`);
  }
  const { summary, salientFacts } = shape.data;
  // A JSON-wrapped apology is still an apology.
  if (looksLikeRefusal(summary)) return failure("refusal", "the summary is a refusal or an error message, not a summary");
  const memoryRefs = salientFacts.memoryRefs ?? [];
  const known = new Set(packet.memoryPages.map((page) => page.path));
  const unknown = memoryRefs.find((ref) => !known.has(ref.path));
  if (unknown !== undefined) return failure("unknown_memory_ref", `memoryRefs names "${unknown.path.slice(0, 200)}", which is not one of the memory pages the compactor was given`);
  return ok({
    summary,
    salientFacts: { memoryRefs, openThreads: salientFacts.openThreads ?? [], abandonedDirections: salientFacts.abandonedDirections ?? [] },
    // Degraded: durable facts had to be inlined because no page held them (no page was recalled at
    // all, or none matched). Without a page there can be no ref, so "no refs" covers both; a
    // pure-noise slice has no durable facts, so it is not degraded.
    degraded: (packet.memoryPages.length === 0 || memoryRefs.length === 0) && summary !== NO_SUBSTANTIVE_CONTENT,
  });
}

/**
 * Validates one compactor reply against the packet it was produced from and, when it is usable,
 * returns the content the parent will bind into the boundary.
 */
export function validateCompactorOutput(
  packet: Packet,
  output: { readonly text: string; readonly finishReason: string | null },
): Result<CompactionContent, CompactorOutputFailure> {
  // A reply cut off by the token limit is incomplete even when it happens to parse.
  if (output.finishReason === "length") return failure("truncated_output", "the model stopped at its output token limit");
  const text = output.text.trim();
  if (text === "") return failure("empty_output", "the model returned no text");
  if (output.finishReason === "content_filter") return failure("refusal", "the provider's content filter stopped the reply");
  // A JSON object never opens like a refusal; checking only prose keeps quoted history from tripping this.
  if (!text.startsWith("{") && looksLikeRefusal(text)) return failure("refusal", "the reply is a refusal or an error message, not a summary");

  const parsed: Result<Parsed, CompactorOutputFailure> =
    packet.outputMode === "projection"
      ? parseProjection(packet, text)
      : ok({ summary: text, salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] }, degraded: false });
  if (!parsed.ok) return parsed;

  const { summary } = parsed.value;
  if (summary.length > packet.policy.maxSummaryChars) {
    return failure("output_too_long", `the summary has ${summary.length} characters; the policy allows ${packet.policy.maxSummaryChars}`);
  }
  const content: CompactionContent = {
    contract: OUTPUT_CONTRACT,
    mode: packet.outputMode,
    summary,
    preview: derivePreview(summary),
    salientFacts: parsed.value.salientFacts,
    degraded: parsed.value.degraded,
  };
  // The boundary replaces the previous boundary plus the frozen turns. If its envelope is not
  // strictly smaller, the context does not shrink and the next preflight would trigger again at
  // once: a compaction loop. Counted exactly as the agent will be sent it.
  const boundaryChars = renderEnvelope("boundary", renderBoundaryBody(content)).content.length;
  if (boundaryChars >= packet.sizes.replacedChars) {
    return failure("not_smaller", `the boundary would take ${boundaryChars} characters, not fewer than the ${packet.sizes.replacedChars} it replaces`);
  }
  return ok(content);
}
