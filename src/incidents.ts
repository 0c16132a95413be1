import { operatorChat, opsAlertTarget } from "./config";
import { alertAllowed, alertDeliveryId, alertWindowStart, suppressedBefore } from "./core/alerts";
import { telegramRoute } from "./core/conversation-id";
import { describeThrown } from "./core/thrown";
import { countAlert, takeEarlierWindows } from "./storage/control/alert-windows";
import type { IncidentInput, RaisedRow } from "./storage/shard/incidents";
import { insertIncidentStatement, markIncidentNotified, raiseIncident as raiseIncidentRow } from "./storage/shard/incidents";
import type { AlertJob, NoticeJob } from "./core/jobs";
import { logger } from "./logger";
import { shardDatabaseOf } from "./storage/shards";

/** An incident to record: what it says, with its conversation; storage gives it an id, a count and times. */
export type Incident = IncidentInput;

/**
 * Records an incident that is one event (a failed run attempt, a refused delivery): a private row,
 * an alert queued for the operator's webhook (`OPS_ALERT_URL`), and — when `OPERATOR_CHAT` names
 * one — a one-line summary queued for the operator's Telegram chat.
 * No incident is ever summarized into the chat it concerns (seed 000: failures stay private
 * operational evidence): that chat already got, or deliberately did not get, its own failure
 * notice, and its other members are not operators.
 */
export async function recordIncident(env: Env, incident: Incident): Promise<void> {
  const stored = await insertIncidentStatement(await shardDatabaseOf(env, incident.conversationId), incident).run();
  logger.warn("incident", incidentFields(incident));
  await queueAlert(env, incident, stored.meta.last_row_id, 1);
  const notice = incidentNotice(env, incident);
  if (notice !== undefined) await env.REPLY_QUEUE.send(notice);
}

/**
 * Raises an incident that is a condition, seen again on every call while it holds (a chain the
 * resolver refuses, a deadline whose handler keeps failing): one open row per (conversation, agent,
 * kind, code) that counts its occurrences (migration 0017), and one operator notice per open row,
 * not per occurrence. The notice is marked sent only after the queue took it, so one whose send
 * failed goes out with the next occurrence instead of never. The webhook's alert goes out when
 * the row is opened, and never for a repeat. The caller closes the row (`closeIncidents`) when it
 * sees the condition gone; the next occurrence then opens a new one, with an alert of its own.
 */
export async function raiseIncident(env: Env, incident: Incident, occurrences = 1): Promise<RaisedRow> {
  const db = await shardDatabaseOf(env, incident.conversationId);
  const row = await raiseIncidentRow(db, incident, occurrences);
  logger.warn("incident", { ...incidentFields(incident), count: row.count });
  // A row seen before counts more than this raise brought (`RaisedRow`): only a new row has exactly `occurrences`.
  if (row.count === occurrences) await queueAlert(env, incident, row.id, row.count);
  if (row.notified) return row;
  const notice = incidentNotice(env, incident);
  if (notice === undefined) return row;
  await env.REPLY_QUEUE.send(notice);
  await markIncidentNotified(db, row.id, incident.createdAt);
  return { ...row, notified: true };
}

/** What a log line says of an incident: its ids, kind and code, never its message. */
const incidentFields = ({ conversationId, agentId, runId, kind, code }: Incident) => ({ conversationId, agentId, runId, kind, code });

export function incidentNotice(env: Env, incident: Incident): NoticeJob | undefined {
  const operator = operatorChat(env);
  if (operator === undefined) return undefined;
  // Telegram chat ids are global: the same chat reached through another bot, or one of its forum
  // topics, is still the room the incident happened in.
  if (telegramRoute(incident.conversationId)?.chatId === operator.chatId) return undefined;
  // Codes and ids only: incident messages may quote provider errors, never conversation text, but
  // the operator's chat gets the least that is useful.
  const whose = incident.agentId === null ? "the conversation's own bookkeeping" : `agent ${incident.agentId}`;
  const text = `Foldline incident: ${incident.kind} ${incident.code} — ${whose} in ${incident.conversationId}${incident.runId === null ? "" : ` (run ${incident.runId})`}`;
  return { type: "notice", botId: operator.botId, chatId: operator.chatId, text };
}

/** The unusable alert setting last warned about: each is logged once per isolate, not with every incident. */
let warnedAbout: string | undefined;

/**
 * Where alerts go, or `undefined` when they are off. Unusable settings (a URL that is neither https
 * nor loopback, or no secret) turn alerts off with a warning; they never fail the incident, nor the
 * request that raised it.
 */
export function enabledAlertTarget(env: Env): { readonly url: string; readonly secret: string } | undefined {
  const target = opsAlertTarget(env);
  if (target.kind === "on") return target;
  if (target.kind === "off") return undefined;
  const setting = `${target.reason}:${String(Reflect.get(env, "OPS_ALERT_URL"))}`;
  if (warnedAbout !== setting) {
    warnedAbout = setting;
    logger.warn("alert", { outcome: "disabled", code: target.reason });
  }
  return undefined;
}

/**
 * Queues the alert of a new incident row, unless its kind is over the rate limit in the incident's
 * window (`core/alerts`); then it is only counted, for the kind's next alert to report. The incident
 * row is stored before this runs and is the record: a failure here (the control database or the
 * queue unavailable) is logged and the alert dropped, never thrown at the write that recorded it.
 */
async function queueAlert(env: Env, incident: Incident, id: number, count: number): Promise<void> {
  if (enabledAlertTarget(env) === undefined) return;
  const { conversationId, agentId, runId, kind, code, createdAt } = incident;
  try {
    const windowStart = alertWindowStart(createdAt);
    const inWindow = await countAlert(env.DB, kind, windowStart);
    if (!alertAllowed(inWindow)) {
      logger.info("alert", { conversationId, agentId, runId, kind, outcome: "suppressed", count: inWindow });
      return;
    }
    const suppressed = suppressedBefore(await takeEarlierWindows(env.DB, kind, windowStart));
    const job: AlertJob = { type: "alert", deliveryId: alertDeliveryId(conversationId, id), id, conversationId, agentId, runId, kind, code, createdAt, count, suppressed };
    await env.JOB_QUEUE.send(job);
  } catch (error) {
    logger.warn("alert", { conversationId, agentId, runId, kind, outcome: "not_queued", code: describeThrown(error).code });
  }
}
