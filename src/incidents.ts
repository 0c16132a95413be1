import { operatorChat } from "./config";
import { telegramRoute } from "./core/conversation-id";
import type { IncidentRecord } from "./storage/compaction-store";
import { insertIncidentStatement } from "./storage/compaction-store";
import type { NoticeJob } from "./core/jobs";
import { conversationDb } from "./storage/shards";

/** An incident to record: the stored record's fields, with its conversation and without the id storage gives it. */
export type Incident = Omit<IncidentRecord, "id"> & { readonly conversationId: string };

/**
 * Records an incident: a private row, and — when `OPERATOR_CHAT` names one — a one-line summary
 * queued for the operator's Telegram chat. No incident is ever summarized into the chat it concerns
 * (seed 000: failures stay private operational evidence): that chat already got, or deliberately
 * did not get, its own failure notice, and its other members are not operators.
 */
export async function recordIncident(env: Env, incident: Incident): Promise<void> {
  await insertIncidentStatement(await conversationDb(env, incident.conversationId), incident).run();
  const notice = incidentNotice(env, incident);
  if (notice !== undefined) await env.JOB_QUEUE.send(notice);
}

export function incidentNotice(env: Env, incident: Incident): NoticeJob | undefined {
  const operator = operatorChat(env);
  if (operator === undefined) return undefined;
  // Telegram chat ids are global: the same chat reached through another bot, or one of its forum
  // topics, is still the room the incident happened in.
  if (telegramRoute(incident.conversationId)?.chatId === operator.chatId) return undefined;
  // Codes and ids only: incident messages may quote provider errors, never conversation text, but
  // the operator's chat gets the least that is useful.
  const text = `Foldline incident: ${incident.kind} ${incident.code} — agent ${incident.agentId} in ${incident.conversationId}${incident.runId === null ? "" : ` (run ${incident.runId})`}`;
  return { type: "notice", botId: operator.botId, chatId: operator.chatId, text };
}
