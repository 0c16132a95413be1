import { z } from "zod";
import { canonicalJson, sha256Hex } from "./hash";
import { isOutboundUrl } from "./outbound-url";

/**
 * Alerts to the operator's webhook (docs/OPERATIONS.md, "Alerts"): each new incident is POSTed to
 * `OPS_ALERT_URL` as a JSON body of ids, codes, times and counts, signed with `OPS_ALERT_SECRET`.
 * This module owns the body, the signature header and the rate limit's rules; the queue consumer
 * (`queue/alert`) sends, and `incidents` queues.
 */

/**
 * What an alert says of an incident. Never its message: incident messages may quote a provider's
 * error, and the webhook is outside the deployment. `deliveryId` is the same on every attempt of
 * one incident's alert, so the receiver can drop a retry it already took.
 */
export const incidentAlertSchema = z.strictObject({
  deliveryId: z.string().regex(/^alr_[0-9a-f]{32}$/),
  /** The incident's id on its conversation's shard. */
  id: z.number().int().positive(),
  conversationId: z.string().min(1).max(512),
  /** Null: the conversation's own bookkeeping, not one agent's chain. */
  agentId: z.string().min(1).max(128).nullable(),
  runId: z.string().min(1).max(256).nullable(),
  kind: z.string().min(1).max(64),
  code: z.string().min(1).max(256),
  createdAt: z.string().min(1).max(64),
  /** Occurrences when the incident was opened (more than 1 only when its raiser counted repeats first). */
  count: z.number().int().positive(),
  /** Incidents of this kind held back by the rate limit since the last alert of the kind went out. */
  suppressed: z.number().int().nonnegative(),
});
export type IncidentAlert = z.infer<typeof incidentAlertSchema>;

/**
 * One delivery per stored incident. Incident ids are counted per shard, and a conversation lives on
 * exactly one shard, so (conversation, id) names an incident across the fleet.
 */
export function alertDeliveryId(conversationId: string, id: number): string {
  return `alr_${sha256Hex(canonicalJson([conversationId, id])).slice(0, 32)}`;
}

/**
 * The body's exact text: the fields picked one by one in a fixed order, so a value that carries
 * more (a job's `type`, a message that reached it by mistake) never sends it, and every attempt of
 * one alert is the same bytes under the same signature.
 */
export function alertBody(alert: IncidentAlert): string {
  const { deliveryId, id, conversationId, agentId, runId, kind, code, createdAt, count, suppressed } = alert;
  return JSON.stringify({ event: "incident", deliveryId, id, conversationId, agentId, runId, kind, code, createdAt, count, suppressed });
}

/** The header carrying the body's HMAC-SHA256, keyed by `OPS_ALERT_SECRET`. */
export const ALERT_SIGNATURE_HEADER = "x-foldline-signature";

/** The header's value for the hex HMAC-SHA256 of the body's UTF-8 bytes. */
export const alertSignature = (hexMac: string): string => `sha256=${hexMac}`;

/** Where alerts go, read from `OPS_ALERT_URL` and `OPS_ALERT_SECRET`. */
export type AlertTarget =
  | { readonly kind: "off" }
  | { readonly kind: "on"; readonly url: string; readonly secret: string }
  | { readonly kind: "misconfigured"; readonly reason: "invalid_url" | "missing_secret" };

/**
 * An empty URL is off. A URL that is not https or loopback (`isOutboundUrl`) is misconfigured, and
 * so is a URL without a secret: an unsigned alert could not be told from a forged one.
 */
export function alertTarget(url: string, secret: string | undefined): AlertTarget {
  const text = url.trim();
  if (text === "") return { kind: "off" };
  if (!isOutboundUrl(text)) return { kind: "misconfigured", reason: "invalid_url" };
  if (secret === undefined || secret === "") return { kind: "misconfigured", reason: "missing_secret" };
  return { kind: "on", url: text, secret };
}

/**
 * The rate limit, per incident kind across every isolate: at most `ALERTS_PER_WINDOW` alerts of one
 * kind in each `ALERT_WINDOW_MS`. Ten in ten minutes is more than one cause needs to be noticed and
 * few enough that a storm of one kind (a provider outage failing every compaction) does not bury
 * the alerts of every other kind; the rest are counted and reported by the kind's next alert.
 */
export const ALERTS_PER_WINDOW = 10;
export const ALERT_WINDOW_MS = 10 * 60_000;

/** The window an incident's time falls in, by its start: the key of its kind's counter. */
export function alertWindowStart(createdAt: string): string {
  const at = Date.parse(createdAt);
  return new Date(at - (at % ALERT_WINDOW_MS)).toISOString();
}

/** Whether the incident counted `countInWindow`-th in its kind's window may be alerted. */
export const alertAllowed = (countInWindow: number): boolean => countInWindow <= ALERTS_PER_WINDOW;

/** How many incidents earlier windows held back, from the counts those windows reached. */
export function suppressedBefore(windowCounts: readonly number[]): number {
  return windowCounts.reduce((held, count) => held + Math.max(0, count - ALERTS_PER_WINDOW), 0);
}
