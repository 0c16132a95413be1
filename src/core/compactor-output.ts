import { z } from "zod";
import type { Result } from "./errors";
import { ok } from "./errors";
import { joinLines, splitLines } from "./line-breaks";
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
  const start = text.replace(/^["'“‘*_>#\s]+/, "");
  if (REFUSAL_OPENING.test(start)) return true;
  const firstSentence = start.split(/(?<=[.!?])\s|\n/, 1)[0] ?? "";
  const unable = UNABLE.exec(firstSentence);
  return unable !== null && !/[@:"“]/.test(firstSentence.slice(0, unable.index));
}

/** The first line of the summary, cut at a word boundary to fit the contract's preview. */
export function derivePreview(summary: string): string {
  const firstLine = (splitLines(summary.trim())[0] ?? "").trim();
  if (firstLine.length <= PREVIEW_MAX_CHARS) return firstLine;
  const room = firstLine.slice(0, PREVIEW_MAX_CHARS - 1);
  const lastSpace = room.search(/\s\S*$/);
  return `${(lastSpace > 0 ? room.slice(0, lastSpace) : room).trimEnd()}…`;
}

/** One list item on one line: a newline inside an item must not read as the next item. */
const oneLine = joinLines;

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

/**
 * The same shape as providers are asked for it with structured output (`response_format`): strict
 * JSON-schema mode needs every field required and no other allowed, so the lists are always there
 * (possibly empty) and carry no bounds a provider might not enforce. Anything it admits, the
 * validator accepts (a property test holds the two together); the bounds are checked after.
 */
export const structuredProjectionSchema = z.strictObject({
  summary: z.string(),
  salientFacts: z.strictObject({
    memoryRefs: z.array(z.strictObject({ path: z.string(), note: z.string() })),
    openThreads: z.array(z.string()),
    abandonedDirections: z.array(z.string()),
  }),
});

/** `structuredProjectionSchema` as the JSON Schema a provider's `response_format` carries. */
export const PROJECTION_JSON_SCHEMA: Record<string, unknown> = (() => {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(structuredProjectionSchema);
  return schema;
})();

type Parsed = Pick<CompactionContent, "summary" | "salientFacts" | "degraded" | "droppedMemoryRefs">;

/**
 * One code fence around the whole reply (```` ```json ```` … ```` ``` ````) is formatting, not content:
 * the text inside is the reply. Two fences, or prose outside one, stay as they are (and fail).
 */
const FENCED = /^```[A-Za-z0-9_-]*[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```$/;
function unfenced(text: string): string {
  const inner = FENCED.exec(text)?.[1];
  return inner === undefined || inner.includes("```") ? text : inner.trim();
}

type ProjectionShape = z.infer<typeof projectionOutputSchema>;

function readProjection(text: string): Result<ProjectionShape, CompactorOutputFailure> {
  // Exactly one JSON object and nothing else: prose around it means the model did not follow the
  // contract, and guessing which part was meant is not the parent's job.
  if (!text.startsWith("{") || !text.endsWith("}")) return failure("invalid_json", "the reply is not a single JSON object (prose around it, or more than one code fence)");
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
  return ok(shape.data);
}

/**
 * The memory page paths a reply points at that the packet did not recall: the caller looks up
 * which of them exist (a reference to a real page is kept whether or not recall found it).
 */
export function unrecalledMemoryRefs(packet: Packet, text: string): string[] {
  if (packet.outputMode !== "projection") return [];
  const read = readProjection(unfenced(text.trim()));
  if (!read.ok) return [];
  const recalled = new Set(packet.memoryPages.map((page) => page.path));
  return [...new Set((read.value.salientFacts.memoryRefs ?? []).map((ref) => ref.path).filter((path) => !recalled.has(path)))];
}

const NO_SUCH_PAGE = "no such memory page";

function parseProjection(packet: Packet, text: string, livePages: ReadonlySet<string>): Result<Parsed, CompactorOutputFailure> {
  const read = readProjection(text);
  if (!read.ok) return read;
  const { summary, salientFacts } = read.value;
  // A JSON-wrapped apology is still an apology.
  if (looksLikeRefusal(summary)) return failure("refusal", "the summary is a refusal or an error message, not a summary");
  // A pointer to a page that exists is kept, recalled or not; one to no page at all is dropped
  // with a note. A wrong reference costs the agent a pointer, never the whole compaction.
  const recalled = new Set(packet.memoryPages.map((page) => page.path));
  const proposed = salientFacts.memoryRefs ?? [];
  const memoryRefs = proposed.filter((ref) => recalled.has(ref.path) || livePages.has(ref.path));
  const dropped = proposed.filter((ref) => !recalled.has(ref.path) && !livePages.has(ref.path)).map((ref) => ({ path: ref.path, note: NO_SUCH_PAGE }));
  return ok({
    summary,
    salientFacts: { memoryRefs, openThreads: salientFacts.openThreads ?? [], abandonedDirections: salientFacts.abandonedDirections ?? [] },
    // Degraded: durable facts had to be inlined because no page held them (none was recalled, or
    // none matched). Without a page there can be no ref, so "no refs" covers both; a pure-noise
    // slice has no durable facts, so it is not degraded.
    degraded: memoryRefs.length === 0 && summary !== NO_SUBSTANTIVE_CONTENT,
    ...(dropped.length === 0 ? {} : { droppedMemoryRefs: dropped }),
  });
}

/**
 * Validates one compactor reply against the packet it was produced from and, when it is usable,
 * returns the content the parent will bind into the boundary.
 */
export function validateCompactorOutput(
  packet: Packet,
  output: { readonly text: string; readonly finishReason: string | null },
  /** Memory pages known to exist beyond the recalled ones (see `unrecalledMemoryRefs`). */
  livePages: ReadonlySet<string> = new Set(),
): Result<CompactionContent, CompactorOutputFailure> {
  // A reply cut off by the token limit is incomplete even when it happens to parse.
  if (output.finishReason === "length") return failure("truncated_output", "the model stopped at its output token limit");
  const text = unfenced(output.text.trim());
  if (text === "") return failure("empty_output", "the model returned no text");
  if (output.finishReason === "content_filter") return failure("refusal", "the provider's content filter stopped the reply");
  // A JSON object never opens like a refusal; checking only prose keeps quoted history from tripping this.
  if (!text.startsWith("{") && looksLikeRefusal(text)) return failure("refusal", "the reply is a refusal or an error message, not a summary");

  const parsed: Result<Parsed, CompactorOutputFailure> =
    packet.outputMode === "projection"
      ? parseProjection(packet, text, livePages)
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
    ...(parsed.value.droppedMemoryRefs === undefined ? {} : { droppedMemoryRefs: parsed.value.droppedMemoryRefs }),
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
