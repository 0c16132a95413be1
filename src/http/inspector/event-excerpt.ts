import type { StoredEvent } from "../../core/events";
import { authorLabel } from "../../core/render";

/**
 * One line per event for the inspector's timeline: who or what (`label`) and a bounded excerpt of
 * any text it carries. The excerpt is data from the log; the page renders it as escaped text.
 */

export interface EventExcerpt {
  readonly label: string;
  readonly text: string | null;
}

/** Longest excerpt shown; the raw event stays one API call away. */
export const EXCERPT_CHARS = 240;

/**
 * `text` on one line, at most `max` characters (an ellipsis included). Never cuts between the two
 * halves of a surrogate pair, which would leave a character that cannot be encoded.
 */
export function excerpt(text: string, max = EXCERPT_CHARS): string {
  const line = text.replace(/\s+/g, " ").trim();
  if (line.length <= max) return line;
  let end = Math.max(0, max - 1);
  const last = line.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${line.slice(0, end)}…`;
}

export function eventExcerpt(event: StoredEvent): EventExcerpt {
  switch (event.kind) {
    case "source": {
      const { body } = event;
      const parts = [`${authorLabel(body.author)} · message ${body.messageId}`];
      if (body.replyToMessageId !== undefined) parts.push(`replying to ${body.replyToMessageId}`);
      if (body.attachments !== undefined && body.attachments.length > 0) parts.push(`attachments: ${body.attachments.map((a) => a.type).join(", ")}`);
      return { label: parts.join(" · "), text: excerpt(body.text) };
    }
    case "correction":
      return event.body.action === "edit"
        ? { label: `edits message ${event.body.targetMessageId}`, text: excerpt(event.body.text) }
        : { label: `deletes message ${event.body.targetMessageId}`, text: null };
    case "proposal": {
      const { body } = event;
      const parts = [`${body.agentId} · proposal ${body.proposalId}`];
      if (body.replyToMessageId !== undefined) parts.push(`replying to ${body.replyToMessageId}`);
      if (body.runId !== undefined) parts.push(`run ${body.runId}`);
      return { label: parts.join(" · "), text: excerpt(body.text) };
    }
    case "delivery":
      return event.body.status === "delivered"
        ? {
            label: `delivered proposal ${event.body.proposalId}${event.body.externalMessageId === undefined ? "" : ` as message ${event.body.externalMessageId}`}`,
            text: null,
          }
        : { label: `delivery of proposal ${event.body.proposalId} failed`, text: excerpt(event.body.reason) };
    case "run": {
      const { body } = event;
      const parts = [`${body.role} ${body.agentId} · run ${body.runId} · ${body.status}`];
      if (body.model !== undefined) parts.push(body.model);
      if (body.error !== undefined) parts.push(`error ${body.error.code}`);
      // A preflight that did not plan records why (core/preflight-decider's SkipReason).
      const reason = body.status === "skipped" ? body.detail?.["reason"] : undefined;
      if (typeof reason === "string") parts.push(`reason ${reason}`);
      return { label: parts.join(" · "), text: null };
    }
  }
}
