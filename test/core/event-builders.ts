import type { Author, EventInput, StoredEvent } from "../../src/core/events";
import { eventHash } from "../../src/core/events";
import type { Turn } from "../../src/core/reconstruction";
import { turnHash } from "../../src/core/reconstruction";

/**
 * Builders for event inputs and stored events, shared by the core tests. Inputs carry a placeholder
 * idempotency key; `storeAll` gives each event a unique key and the sequence the log would assign.
 */

export const CONVERSATION = "api:core-test";
export const ADA: Author = { id: "u:ada", name: "Ada" };
export const BOB: Author = { id: "u:bob", name: "Bob", username: "bob" };

interface Common {
  readonly sensitive?: boolean;
  readonly key?: string;
}

export function source(
  messageId: string,
  text: string,
  options: Common & { readonly author?: Author; readonly replyTo?: string; readonly sentAt?: string } = {},
): EventInput {
  return {
    kind: "source",
    idempotencyKey: options.key ?? `source:${messageId}`,
    sensitive: options.sensitive ?? false,
    body: {
      messageId,
      author: options.author ?? ADA,
      text,
      ...(options.sentAt === undefined ? {} : { sentAt: options.sentAt }),
      ...(options.replyTo === undefined ? {} : { replyToMessageId: options.replyTo }),
    },
  };
}

export function edit(targetMessageId: string, text: string, options: Common & { readonly editedAt?: string } = {}): EventInput {
  return {
    kind: "correction",
    idempotencyKey: options.key ?? `edit:${targetMessageId}`,
    sensitive: options.sensitive ?? false,
    body: {
      action: "edit",
      targetMessageId,
      text,
      ...(options.editedAt === undefined ? {} : { editedAt: options.editedAt }),
    },
  };
}

export function deletion(targetMessageId: string, options: Common & { readonly deletedAt?: string } = {}): EventInput {
  return {
    kind: "correction",
    idempotencyKey: options.key ?? `delete:${targetMessageId}`,
    sensitive: options.sensitive ?? false,
    body: {
      action: "delete",
      targetMessageId,
      ...(options.deletedAt === undefined ? {} : { deletedAt: options.deletedAt }),
    },
  };
}

export function proposal(
  proposalId: string,
  agentId: string,
  text: string,
  options: Common & { readonly replyTo?: string; readonly runId?: string } = {},
): EventInput {
  return {
    kind: "proposal",
    idempotencyKey: options.key ?? `proposal:${proposalId}`,
    sensitive: options.sensitive ?? false,
    body: {
      proposalId,
      agentId,
      text,
      ...(options.runId === undefined ? {} : { runId: options.runId }),
      ...(options.replyTo === undefined ? {} : { replyToMessageId: options.replyTo }),
    },
  };
}

export function delivered(proposalId: string, options: Common = {}): EventInput {
  return {
    kind: "delivery",
    idempotencyKey: options.key ?? `delivered:${proposalId}`,
    sensitive: options.sensitive ?? false,
    body: { status: "delivered", proposalId },
  };
}

export function failed(proposalId: string, reason = "chat not found", options: Common = {}): EventInput {
  return {
    kind: "delivery",
    idempotencyKey: options.key ?? `failed:${proposalId}`,
    sensitive: options.sensitive ?? false,
    body: { status: "failed", proposalId, reason },
  };
}

export function run(runId: string, agentId: string, options: Common = {}): EventInput {
  return {
    kind: "run",
    idempotencyKey: options.key ?? `run:${runId}`,
    sensitive: options.sensitive ?? false,
    body: { runId, agentId, role: "agent", status: "completed" },
  };
}

/** One event as the log would hold it at `seq`. */
export function stored(seq: number, input: EventInput, conversationId = CONVERSATION): StoredEvent {
  return {
    ...input,
    conversationId,
    seq,
    hash: eventHash(conversationId, input),
    recordedAt: new Date(Date.UTC(2024, 0, 1, 0, 0, seq)).toISOString(),
  };
}

/** The inputs appended in order to an empty log: seqs 1..n, each with its own idempotency key. */
export function storeAll(inputs: readonly EventInput[], firstSeq = 1): StoredEvent[] {
  return inputs.map((input, index) => {
    const seq = firstSeq + index;
    return stored(seq, { ...input, idempotencyKey: `k${seq}` });
  });
}

/**
 * A turn as `reconstruct` would return it: `s<seq>` ids for user turns and `p<seq>` for replies,
 * with the content hash computed the same way. For planning and rendering tests that start from turns.
 */
export function turn(
  id: string,
  group: number,
  text: string,
  options: {
    readonly role?: Turn["role"];
    readonly author?: Author;
    readonly originSeq?: number;
    readonly effectiveSeq?: number;
    readonly sensitive?: boolean;
  } = {},
): Turn {
  const role = options.role ?? (id.startsWith("p") ? "assistant" : "user");
  const author = options.author ?? (role === "user" ? ADA : { id: "agent-a" });
  const seq = Number(id.slice(1));
  const originSeq = options.originSeq ?? (Number.isInteger(seq) ? seq : group);
  return {
    id,
    group,
    role,
    author,
    text,
    hash: turnHash(role, author, text),
    originSeq,
    effectiveSeq: options.effectiveSeq ?? originSeq,
    messageId: `m-${id}`,
    sensitive: options.sensitive ?? false,
    edited: false,
  };
}
