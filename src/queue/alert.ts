import { ALERT_SIGNATURE_HEADER, alertBody, alertSignature } from "../core/alerts";
import { hexOf } from "../core/hex";
import type { AlertJob } from "../core/jobs";
import { describeThrown } from "../core/thrown";
import { enabledAlertTarget } from "../incidents";
import { logger } from "../logger";
import { backoffSeconds } from "./retry";

/**
 * The alert consumer: POSTs one incident's alert to the operator's webhook (`OPS_ALERT_URL`),
 * signed with `OPS_ALERT_SECRET` (`core/alerts`). A 2xx answer is delivered. Any other answer, a
 * redirect included, or no answer within `ALERT_TIMEOUT_MS`, is retried by the queue with the same
 * backoff as every job, at least the webhook's `retry-after`; after the queue's last retry the job
 * is dead-lettered and given up with an error line. The body is the same bytes on every attempt, and
 * its `deliveryId` lets the receiver drop an attempt it already took.
 */

type Outcome = { kind: "done" } | { kind: "retry"; delaySeconds: number };

/** A webhook that takes longer than this to answer is retried rather than waited for. */
const ALERT_TIMEOUT_MS = 10_000;

const logged = (job: AlertJob) => ({ conversationId: job.conversationId, agentId: job.agentId, runId: job.runId, kind: job.kind });

export async function deliverAlert(env: Env, job: AlertJob, attempts: number): Promise<Outcome> {
  // Alerts turned off (or made unusable) since this one was queued: there is nowhere to send it.
  const target = enabledAlertTarget(env);
  if (target === undefined) return { kind: "done" };
  const body = alertBody(job);
  try {
    const response = await fetch(target.url, {
      method: "POST",
      headers: { "content-type": "application/json", [ALERT_SIGNATURE_HEADER]: alertSignature(await hmacHex(target.secret, body)) },
      body,
      // A redirect is not followed: it would send the signed body to a URL nobody configured.
      redirect: "manual",
      signal: AbortSignal.timeout(ALERT_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.ok) {
      logger.info("alert", { ...logged(job), outcome: "delivered", status: response.status, attempts });
      return { kind: "done" };
    }
    logger.warn("alert", { ...logged(job), outcome: "refused", status: response.status, attempts });
    return { kind: "retry", delaySeconds: backoffSeconds(env, attempts, retryAfterSeconds(response.headers.get("retry-after"))) };
  } catch (error) {
    logger.warn("alert", { ...logged(job), outcome: "unreachable", code: describeThrown(error).code, attempts });
    return { kind: "retry", delaySeconds: backoffSeconds(env, attempts) };
  }
}

/** A dead-lettered alert: every attempt the queue allows failed. The incident itself stays stored and listed. */
export function abandonAlert(job: AlertJob, attempts: number): Outcome {
  logger.error("alert", { ...logged(job), outcome: "given_up", attempts });
  return { kind: "done" };
}

/** `retry-after` in seconds; its HTTP-date form is rare from webhooks and falls back to the backoff. */
function retryAfterSeconds(header: string | null): number | null {
  const seconds = Number.parseInt(header ?? "", 10);
  return Number.isSafeInteger(seconds) && seconds >= 0 ? seconds : null;
}

async function hmacHex(secret: string, body: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(body)));
  return hexOf(mac);
}
