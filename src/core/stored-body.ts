import type { EventInput } from "./events";
import { canonicalJson } from "./hash";

/**
 * How the log spells an event's key and body in its row. Every event is stored as its key and the
 * canonical JSON of its body (RFC 8785) but two kinds, since migrations/shard/0033 (and once no
 * Worker from before it may read the log):
 *
 * - A source's body as `{"a":[…],"messageId":…,"text":…}` (`compactSource`): its message id and
 *   text under their names, which the log's index by message id and the turn index read, every
 *   other value in `a` in `SOURCE_FIELDS` order, where the canonical object spelled each field's
 *   name again in every row.
 * - A compactor's skipped run, written for every source each compactor serves below its trigger
 *   (about half of a conversation's events). All of it but five values derives from them
 *   (`core/preflight-decider` `skippedRun`): its key from the compactor and the source's number, its
 *   body from those and three sizes and the reason. Its row's key names the compactor by its
 *   `compactor_keys` id and the source by its number (`<id> <seq>`, which the storage layer spells
 *   back to the key, `skippedNames`), and its body is the three sizes, the reason after them only
 *   when it is not the usual `below_trigger` (`shortSkipped`, `SHORT_FIELDS`): about 20 bytes where
 *   the object takes 230. Before 0033 (and while a Worker from before it may read the log, and for a
 *   compactor's first run after the release) the key is stored whole and the body as the array of
 *   six values in `SKIPPED_FIELDS` order (`storedBody`).
 *
 * The event's hash covers its canonical body and key, never how a row spells them. An event is
 * stored short only when the short form reads back (`eventBody`) to exactly that key and canonical
 * body; anything else is stored whole. A row edited behind the service's back reads back as some
 * other event (or as one the event schema refuses), and its hash names it, as for any event.
 */

/** The values of a skipped run that its body does not derive, in their stored order (before 0033). */
export const SKIPPED_FIELDS = ["compactor", "sourceSeq", "activeChars", "activeMessages", "triggerInputChars", "reason"] as const;

/** The values a skipped run's body stores beside its short key (0033), in order; the reason only when not `USUAL_REASON`. */
export const SHORT_FIELDS = ["activeChars", "activeMessages", "triggerInputChars", "reason"] as const;
const USUAL_REASON = "below_trigger";

type SkippedValues = Readonly<Record<(typeof SKIPPED_FIELDS)[number], unknown>>;

/** A skipped run's key, and the compactor and source it names: `run:pf_<compactor>_<seq>:skipped`. */
const SKIPPED_KEY = /^run:pf_([A-Za-z0-9][A-Za-z0-9._-]{0,63})_(0|[1-9][0-9]{0,14}):skipped$/;

/** The compactor and the source a skipped run's key names; undefined for any other key. */
export function skippedNames(key: string): { readonly compactor: string; readonly sourceSeq: number } | undefined {
  const named = SKIPPED_KEY.exec(key);
  return named === null ? undefined : { compactor: named[1]!, sourceSeq: Number(named[2]) };
}

function skippedBody({ compactor, sourceSeq, activeChars, activeMessages, triggerInputChars, reason }: SkippedValues): Record<string, unknown> {
  return {
    agentId: compactor,
    detail: { activeChars, activeMessages, reason, sourceSeq, triggerInputChars },
    role: "compactor",
    runId: `pf_${String(compactor)}_${String(sourceSeq)}`,
    status: "skipped",
  };
}

/** A skipped run as migration 0033 stores it: its compactor and source (the row's key names them), and its body's array. */
export interface ShortSkipped {
  readonly compactor: string;
  readonly sourceSeq: number;
  readonly body: string;
}

/**
 * The short form of a skipped run, where it reads back as exactly this event's key and body;
 * undefined for any other event (only a skipped run's key and array read back as an object).
 */
export function shortSkipped({ kind, idempotencyKey, body }: Pick<EventInput, "kind" | "idempotencyKey" | "body">): ShortSkipped | undefined {
  const run = body as { agentId?: unknown; detail?: Record<string, unknown> };
  const detail = run.detail ?? {};
  const values = SHORT_FIELDS.map((field) => detail[field] ?? null);
  const stored = canonicalJson(values.at(-1) === USUAL_REASON ? values.slice(0, -1) : values);
  // Read back as this very body, it is a skipped run's: its compactor and source are the ones its key names.
  return canonicalJson(eventBody(kind, idempotencyKey, stored)) === canonicalJson(body) ? { compactor: run.agentId as string, sourceSeq: detail["sourceSeq"] as number, body: stored } : undefined;
}

/** A skipped run's body from the six values its row held before 0033. */
const fromSix = (value: readonly unknown[]): Record<string, unknown> => skippedBody(Object.fromEntries(SKIPPED_FIELDS.map((field, i) => [field, value[i]])) as SkippedValues);

/**
 * The values of a source's body that its stored form (0033) keeps in its `a` array, in order; its
 * `messageId` and `text` keep their names, which the log's index by message id and the turn index
 * read. `sentAt` is kept as epoch milliseconds where that spells it back exactly.
 */
export const SOURCE_FIELDS = ["authorId", "authorName", "username", "sentAt", "conversationType", "replyToMessageId", "attachments"] as const;

interface SourceBody {
  readonly messageId?: unknown;
  readonly text?: unknown;
  readonly author?: { readonly id?: unknown; readonly name?: unknown; readonly username?: unknown };
  readonly sentAt?: unknown;
  readonly conversationType?: unknown;
  readonly replyToMessageId?: unknown;
  readonly attachments?: unknown;
}

/** A source's body from its stored form's values (absent where null). */
function fromCompactSource(messageId: unknown, text: unknown, values: readonly unknown[]): Record<string, unknown> {
  const [authorId, authorName, username, sentAt, conversationType, replyToMessageId, attachments] = SOURCE_FIELDS.map((_, i) => values[i] ?? undefined);
  return {
    author: { id: authorId, name: authorName, username },
    messageId,
    text,
    sentAt: typeof sentAt === "number" ? new Date(sentAt).toISOString() : sentAt,
    conversationType,
    replyToMessageId,
    attachments,
  };
}

/**
 * A source's body as the log stores it since migrations/shard/0033, where it reads back (`eventBody`)
 * as exactly this body: `{"a":[…],"messageId":…,"text":…}`, its field names not spelled again.
 * Undefined for any other body.
 */
export function compactSource(kind: EventInput["kind"], body: unknown): string | undefined {
  if (kind !== "source") return undefined;
  const { messageId, text, author, sentAt, conversationType, replyToMessageId, attachments } = body as SourceBody;
  const at = typeof sentAt === "string" && new Date(Date.parse(sentAt)).toISOString() === sentAt ? Date.parse(sentAt) : sentAt;
  const values = [author?.id, author?.name, author?.username, at, conversationType, replyToMessageId, attachments].map((value) => value ?? null);
  while (values.at(-1) === null) values.pop();
  const stored = canonicalJson({ a: values, messageId, text });
  return canonicalJson(sourceBody(JSON.parse(stored))) === canonicalJson(body) ? stored : undefined;
}

/** A stored source body as the canonical object: expanded from the compact form, or as stored. */
const sourceBody = (value: unknown): unknown => (isCompactSource(value) ? fromCompactSource(value.messageId, value.text, value.a) : value);

/** The body as the log stores it under its whole key (before 0033): the six values' array where it reads back as this body exactly. */
export function storedBody(kind: EventInput["kind"], body: unknown): string {
  const canonical = canonicalJson(body);
  const run = body as { agentId?: unknown; detail?: Record<string, unknown> };
  const values: SkippedValues = { ...run.detail, compactor: run.agentId } as SkippedValues;
  const six = SKIPPED_FIELDS.map((field) => values[field] ?? null);
  return kind === "run" && canonicalJson(fromSix(six)) === canonical ? canonicalJson(six) : canonical;
}

/**
 * The body a stored row spells, given the event's key (as the storage layer spells it back): the
 * canonical body it was hashed as, for a row nobody edited.
 */
export function eventBody(kind: string, key: string, stored: string): unknown {
  const value = JSON.parse(stored) as unknown;
  if (kind === "source") return sourceBody(value);
  if (kind !== "run" || !Array.isArray(value)) return value;
  if (value.length === SKIPPED_FIELDS.length) return fromSix(value);
  const named = skippedNames(key);
  if (named === undefined || (value.length !== SHORT_FIELDS.length && value.length !== SHORT_FIELDS.length - 1)) return value;
  const [activeChars, activeMessages, triggerInputChars, reason = USUAL_REASON] = value as unknown[];
  return skippedBody({ ...named, activeChars, activeMessages, triggerInputChars, reason });
}

/** Whether a stored source body is the compact form: exactly `a` (an array), `messageId` and `text`. */
function isCompactSource(value: unknown): value is { readonly a: readonly unknown[]; readonly messageId: unknown; readonly text: unknown } {
  if (value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value as object);
  return keys.length === 3 && keys.includes("messageId") && keys.includes("text") && Array.isArray((value as { a?: unknown }).a);
}

/**
 * The short body as what it adds (`head`) to the characters it ends with in common with the whole
 * body (`tail`, counted as SQLite counts them: code points), so that a writer passing both passes a
 * source's text, which ends both, once (src/storage/shard/events.ts: a row's parameter stays within
 * D1's 2 MB a value for any body the API takes). `head` followed by the whole body's last `tail`
 * code points is `short`.
 */
export function borrowedTail(short: string, whole: string): { head: string; tail: number } {
  let units = 0;
  // Past either string's start `charCodeAt` is NaN, which equals nothing: the walk stops there.
  while (short.charCodeAt(short.length - 1 - units) === whole.charCodeAt(whole.length - 1 - units)) units += 1;
  // Never between the halves of a surrogate pair.
  const start = short.length - units;
  const from = isLowSurrogate(short.charCodeAt(start)) ? start + 1 : start;
  let tail = 0;
  for (let i = from; i < short.length; i++) if (!isLowSurrogate(short.charCodeAt(i))) tail += 1;
  return { head: short.slice(0, from), tail };
}

const isLowSurrogate = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff;
