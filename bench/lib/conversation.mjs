// A deterministic synthetic conversation (the same words, lengths and order on every run), built
// like test/integration/compaction-replay.test.ts: a user question and the agent's delivered reply
// per group. Characters are counted exactly as Foldline counts them: the rendered native messages
// the agent would be sent (`Ada: <question>` for the user, the reply text for the agent).

import { prng, sentence } from "../../scripts/lib/synthetic-text.mjs";

export { prng, sentence };

export const AUTHOR = { id: "ada", name: "Ada" };

/** Characters of a user turn as rendered for the agent (`renderTurn`). */
export const userChars = (/** @type {string} */ text) => `${AUTHOR.name}: ${text}`.length;

/**
 * @typedef {{ index: number, question: string, answer: string, chars: number, events: object[] }} Group
 */

/**
 * A generator of groups for one conversation: source + proposal + delivery, with keys unique in
 * that conversation (`prefix` keeps separate streams in one conversation apart).
 * @param {{ seed: number, agentId: string, prefix?: string }} options
 */
export function groupStream({ seed, agentId, prefix = "g" }) {
  const random = prng(seed);
  let index = 0;
  return {
    /** @returns {Group} */
    next() {
      const g = index++;
      const question = sentence(random, 150, 450);
      const answer = sentence(random, 80, 300);
      const id = `${prefix}${g}`;
      return {
        index: g,
        question,
        answer,
        chars: userChars(question) + answer.length,
        events: [
          { kind: "source", idempotencyKey: `s-${id}`, body: { messageId: `m-${id}`, author: AUTHOR, text: question } },
          { kind: "proposal", idempotencyKey: `p-${id}`, body: { proposalId: `p-${id}`, agentId, replyToMessageId: `m-${id}`, text: answer } },
          { kind: "delivery", idempotencyKey: `d-${id}`, body: { status: "delivered", proposalId: `p-${id}` } },
        ],
      };
    },
  };
}

/**
 * A single short user message (the append-latency probe): a source event, no reply.
 * @param {string} key @param {string} text
 */
export function probeEvent(key, text) {
  return { kind: "source", idempotencyKey: key, body: { messageId: key, author: AUTHOR, text } };
}
