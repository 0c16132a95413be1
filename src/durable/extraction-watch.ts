import { planWatchdogSeconds } from "../config";
import { extractionRunId } from "../core/extraction-plan";
import type { ExtractJob } from "../core/jobs";
import type { ExtractionWake } from "../core/wakeups";
import { armExtraction, extractionStep, wakeKey } from "../core/wakeups";
import type { StoredDeclaration } from "../storage/control/declarations";
import { readExtractionEvidence } from "../storage/shard/extractions";
import type { EngineDeps } from "./engine-deps";

/**
 * The extraction each settled boundary owes, kept by the conversation's object until the shard
 * shows it seen (`core/wakeups`, `extraction`). The queue consumer sends the job right after
 * settling and says nothing when that send fails: whether it threw, timed out, or was queued and
 * lost its answer, this deadline sends the job again once its grace has passed with the extraction
 * unseen. "Owed" is not stored anywhere else: it is a boundary with no completed run and no
 * delivery seen, read from the shard each time the deadline fires.
 *
 * The grace is the plan watchdog's period (`PLAN_WATCHDOG_SECONDS`): a job the queue took has
 * normally run long before it, so a healthy extraction is seldom sent twice, and a copy that does
 * cross a slow one is harmless: it finds the run recorded and calls no model (`queue/extract`), or
 * merges facts the pages already hold (merging is idempotent by source event).
 */
export class ExtractionWatch {
  constructor(private readonly deps: EngineDeps) {}

  #graceMs(): number {
    return planWatchdogSeconds(this.deps.env) * 1_000;
  }

  /**
   * Keeps the extraction of the boundary `runId` is about to settle as. Called before the boundary
   * is stored: a boundary is never durable without it (`armExtraction`). The job is the one the
   * consumer sends: the declaration's compactor, its provider's model and profile.
   */
  async arm(declaration: StoredDeclaration, runId: string, boundaryId: string, now: Date): Promise<void> {
    const { compactor } = declaration.registration;
    const job: ExtractJob = {
      type: "extract",
      conversationId: this.deps.conversationId,
      agentId: declaration.agentId,
      compactorId: compactor.id,
      runId,
      boundaryId,
      model: compactor.provider.model,
      profile: compactor.provider.profile,
    };
    await this.deps.wakes.put(wakeKey.extraction(runId), armExtraction(job, now.getTime(), this.#graceMs()));
  }

  /**
   * A due extraction deadline: let go once the extraction was seen, otherwise sent again. The next
   * deadline is stored before the send, so a send that throws leaves the deadline for the alarm's
   * retry (`durable/wakeups` `wakeFailed`): re-sends that keep failing are one incident, and the
   * first one that goes through closes it.
   */
  async onWake(key: string, wake: ExtractionWake, now: Date): Promise<void> {
    const { shard, wakes, env } = this.deps;
    const evidence = await readExtractionEvidence(shard, wake.job.runId, extractionRunId(wake.job.runId));
    const step = extractionStep(wake, evidence, now.getTime(), this.#graceMs());
    if (step.action === "drop") {
      await wakes.delete(key);
      return;
    }
    await wakes.put(key, step.next);
    await env.JOB_QUEUE.send(wake.job);
  }
}
