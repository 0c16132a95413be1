import type { EventInput } from "./events";
import { canonicalJson } from "./hash";

/**
 * How the log spells an event's body in its `body` column. Every event is stored as the canonical
 * JSON of its body (RFC 8785) but one: a compactor's skipped run, written for every source each
 * compactor serves below its trigger (about half of a conversation's events). All of its body but
 * six values derives from them (`core/preflight-decider` `skippedRun`), so it is stored as the array
 * of those values in `SKIPPED_FIELDS` order: about 45 bytes where the object takes 230.
 *
 * The event's hash covers its canonical body, never how a row spells it. A body is stored as the
 * array only when the array reads back (`eventBody`) to exactly that canonical body; anything else
 * is stored whole. A row edited behind the service's back reads back as some other body (or as one
 * the event schema refuses), and its hash names it, as for any event.
 */

/** The values of a skipped run that its body does not derive, in their stored order. */
export const SKIPPED_FIELDS = ["compactor", "sourceSeq", "activeChars", "activeMessages", "triggerInputChars", "reason"] as const;

type SkippedValues = Readonly<Record<(typeof SKIPPED_FIELDS)[number], unknown>>;

function skippedBody({ compactor, sourceSeq, activeChars, activeMessages, triggerInputChars, reason }: SkippedValues): Record<string, unknown> {
  return {
    agentId: compactor,
    detail: { activeChars, activeMessages, reason, sourceSeq, triggerInputChars },
    role: "compactor",
    runId: `pf_${String(compactor)}_${String(sourceSeq)}`,
    status: "skipped",
  };
}

/** The body as the log stores it: the array where it reads back (only a run's does) as this body exactly. */
export function storedBody(kind: EventInput["kind"], body: unknown): string {
  const canonical = canonicalJson(body);
  const run = body as { agentId?: unknown; detail?: Record<string, unknown> };
  const values: SkippedValues = { ...run.detail, compactor: run.agentId } as SkippedValues;
  const compact = canonicalJson(SKIPPED_FIELDS.map((field) => values[field] ?? null));
  return canonicalJson(eventBody(kind, compact)) === canonical ? compact : canonical;
}

/** The body a stored row spells: the canonical body it was hashed as, for a row nobody edited. */
export function eventBody(kind: string, stored: string): unknown {
  const value = JSON.parse(stored) as unknown;
  if (kind !== "run" || !Array.isArray(value) || value.length !== SKIPPED_FIELDS.length) return value;
  return skippedBody(Object.fromEntries(SKIPPED_FIELDS.map((field, i) => [field, value[i] as unknown])) as SkippedValues);
}
