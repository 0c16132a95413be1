import { operatorChat } from "./config";
import { telegramRoute } from "./core/conversation-id";
import type { IncidentInput, RaisedRow } from "./storage/compaction-store";
import { insertIncidentStatement, markIncidentNotified, raiseIncident as raiseIncidentRow } from "./storage/compaction-store";
import type { NoticeJob } from "./core/jobs";
import { logger } from "./logger";
import { conversationDb } from "./storage/shards";

/** An incident to record: what it says, with its conversation; storage gives it an id, a count and times. */
export type Incident = IncidentInput;

/**
 * Records an incident that is one event (a failed run attempt, a refused delivery): a private row,
 * and — when `OPERATOR_CHAT` names one — a one-line summary queued for the operator's Telegram chat.
 * No incident is ever summarized into the chat it concerns (seed 000: failures stay private
 * operational evidence): that chat already got, or deliberately did not get, its own failure
 * notice, and its other members are not operators.
 */
export async function recordIncident(env: Env, incident: Incident): Promise<void> {
  await insertIncidentStatement(await conversationDb(env, incident.conversationId), incident).run();
  logger.warn("incident", incidentFields(incident));
  const notice = incidentNotice(env, incident);
  if (notice !== undefined) await env.JOB_QUEUE.send(notice);
}

/**
 * Raises an incident that is a condition, seen again on every call while it holds (a chain the
 * resolver refuses, a deadline whose handler keeps failing): one open row per (conversation, agent,
 * kind, code) that counts its occurrences (migration 0017), and one operator notice per open row,
 * not per occurrence. The notice is marked sent only after the queue took it, so one whose send
 * failed goes out with the next occurrence instead of never. The caller closes the row
 * (`closeIncidents`) when it sees the condition gone; the next occurrence then opens a new one.
 */
export async function raiseIncident(env: Env, incident: Incident, occurrences = 1): Promise<RaisedRow> {
  const db = await conversationDb(env, incident.conversationId);
  const row = await raiseIncidentRow(db, incident, occurrences);
  logger.warn("incident", { ...incidentFields(incident), count: row.count });
  if (row.notified) return row;
  const notice = incidentNotice(env, incident);
  if (notice === undefined) return row;
  await env.JOB_QUEUE.send(notice);
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
