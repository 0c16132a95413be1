import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import { splitMessage } from "../core/telegram-split";
import type { SendFailure } from "./bot-api";
import { sendMessage } from "./bot-api";

/**
 * Getting one text into a chat: split to Telegram's limit, sent part by part in order, resuming
 * after the parts an earlier attempt sent (the split is deterministic, so the parts are the same).
 * Whether the text may be sent, and what a failure means for the delivery event, is the caller's
 * decision.
 */

export interface TextDelivery {
  readonly botId: string;
  readonly chatId: number;
  /** The forum topic; every part goes to it. */
  readonly threadId?: number | undefined;
  /** The message being answered; only the first part replies to it, the rest follow it. */
  readonly replyToMessageId?: number | undefined;
  readonly text: string;
  /**
   * The ids of the parts an earlier attempt already got into the chat, in order: sending resumes
   * after them, so a retry never posts a part twice.
   */
  readonly alreadySent?: readonly number[] | undefined;
}

/**
 * Why a delivery stopped, and how far it got: the parts before the failure are in the chat (their
 * ids in `sentMessageIds`, `sentParts` of them), the failed part and those after it are not — or,
 * when `unavailable`, the failed part may be.
 */
export type DeliveryFailure = SendFailure & { readonly sentParts: number; readonly sentMessageIds: readonly number[] };

export async function deliverText(env: Env, delivery: TextDelivery): Promise<Result<{ readonly messageIds: readonly number[] }, DeliveryFailure>> {
  const parts = splitMessage(delivery.text);
  // Telegram refuses empty text; saying so here spares a request that cannot succeed.
  if (parts.length === 0) return { ok: false, error: { kind: "not_sent", reason: "empty_text", description: "the text is blank", sentParts: 0, sentMessageIds: [] } };
  const messageIds: number[] = [...(delivery.alreadySent ?? []).slice(0, parts.length)];
  for (const [index, text] of parts.entries()) {
    if (index < messageIds.length) continue;
    // Sequential on purpose: parallel sends could arrive out of order.
    const sent = await sendMessage(env, delivery.botId, {
      chatId: delivery.chatId,
      text,
      messageThreadId: delivery.threadId,
      replyToMessageId: index === 0 ? delivery.replyToMessageId : undefined,
    });
    if (!sent.ok) return { ok: false, error: { ...sent.error, sentParts: messageIds.length, sentMessageIds: [...messageIds] } };
    messageIds.push(sent.value.messageId);
  }
  return ok({ messageIds });
}
