import type { PlannedInsert } from "../core/append";
import type { StoredEvent } from "../core/events";
import type { ReplyJob } from "../core/jobs";
import { sendBatches } from "../core/queue-batches";
import { describeThrown } from "../core/thrown";
import type { ReplyHandoffWake } from "../core/wakeups";
import { armReplyHandoff, handoffFailed, wakeKey } from "../core/wakeups";
import { logger } from "../logger";
import type { StoredDeclaration } from "../storage/control/declarations";
import { readEventsAt } from "../storage/shard/events";
import { replyJobs } from "./reply-jobs";
import type { WakeupBook } from "./wakeups";

/**
 * The reply jobs an append owes its replying agents, kept by the conversation's object until the
 * queue took them (`core/wakeups`, `reply_handoff`). The deadline is armed before the append is
 * written, so no source is ever stored without it: a crash between the write and the send, a send
 * that throws, or one whose answer is lost leaves the deadline, which sends the jobs of the sources
 * the log holds again. Sends are cut to what one `sendBatch` takes (`core/queue-batches`).
 */
export class ReplyHandoff {
  constructor(
    private readonly deps: {
      readonly env: Env;
      readonly wakes: WakeupBook;
      readonly conversationId: () => string;
      readonly db: () => D1Database;
    },
  ) {}

  /**
   * Arms the hand-off of the sources among `planned`, before they are written; `replying`: whether
   * any agent serving the conversation may reply (undefined: not known, armed to be sure). Returns
   * its key, or undefined when nothing is owed.
   */
  async arm(planned: readonly PlannedInsert[], replying: boolean | undefined, now: Date): Promise<string | undefined> {
    const sources = planned.filter((p) => p.input.kind === "source").map((p) => ({ seq: p.seq, hash: p.hash }));
    const [first] = sources;
    if (first === undefined || replying === false) return undefined;
    const key = wakeKey.replyHandoff(first.seq);
    await this.deps.wakes.put(key, armReplyHandoff(sources, now.getTime()));
    return key;
  }

  /** Lets an armed hand-off go: its append wrote nothing. */
  async disarm(key: string): Promise<void> {
    await this.deps.wakes.delete(key);
  }

  /**
   * Right after the write: the jobs `written` owes the agents `serving` names, sent, and the
   * deadline let go. A read or a send that fails leaves the deadline, due again soon: never thrown,
   * the append is already acknowledged.
   */
  async handOff(key: string, serving: () => Promise<readonly StoredDeclaration[]>, written: readonly StoredEvent[], now: Date): Promise<void> {
    const conversationId = this.deps.conversationId();
    try {
      await this.#send(replyJobs(conversationId, await serving(), written));
      await this.deps.wakes.delete(key);
    } catch (error) {
      logger.error("step.failed", { step: "reply_handoff", conversationId, code: describeThrown(error).code });
      await this.#later(key, now);
    }
  }

  /**
   * A due hand-off: the jobs of the sources the log holds as they were armed (a source the log does
   * not hold at its place with its hash was never written), for the agents serving now, sent; then
   * let go. A send that throws is the alarm's to retry (`durable/wakeups` `wakeFailed`).
   */
  async onWake(key: string, wake: ReplyHandoffWake, serving: () => Promise<readonly StoredDeclaration[]>): Promise<void> {
    const conversationId = this.deps.conversationId();
    const armed = new Map(wake.sources.map((s) => [s.seq, s.hash]));
    const held = (await readEventsAt(this.deps.db(), conversationId, [...armed.keys()])).filter((event) => armed.get(event.seq) === event.hash);
    if (held.length > 0) await this.#send(replyJobs(conversationId, await serving(), held));
    await this.deps.wakes.delete(key);
  }

  async #send(jobs: readonly ReplyJob[]): Promise<void> {
    for (const batch of sendBatches(jobs)) await this.deps.env.REPLY_QUEUE.sendBatch(batch.map((body) => ({ body })));
  }

  /** The deadline, due again after the backoff of one more failure (kept as it was when even that cannot be written). */
  async #later(key: string, now: Date): Promise<void> {
    try {
      const wake = await this.deps.wakes.get(key);
      if (wake?.kind === "reply_handoff") await this.deps.wakes.put(key, handoffFailed(wake, now.getTime()));
    } catch (error) {
      logger.error("step.failed", { step: "reply_handoff_retry", conversationId: this.deps.conversationId(), code: describeThrown(error).code });
    }
  }
}
