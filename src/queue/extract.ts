import type { Result } from "../core/errors";
import { opsText } from "../core/ops-text";
import { ok } from "../core/errors";
import type { ExtractedFact } from "../core/fact-extraction";
import { factsByPage, mergeFacts } from "../core/fact-merge";
import { extractionRunId, failedExtractionEvent, provenanceRows, sliceTurns, turnSeq } from "../core/extraction-plan";
import type { ExtractJob } from "../core/jobs";
import type { Packet } from "../core/packet";
import { appendToConversation } from "../durable/stub";
import { recordIncident } from "../incidents";
import { logger } from "../logger";
import { runExtractor } from "../model/extractor-model";
import { readBoundaryByRun } from "../storage/shard/boundaries";
import { readPacket } from "../storage/r2/documents";
import { extractionRecorded, readEventHashes, readPageHeads, recordExtractionRun, writeMergedVersions } from "../storage/shard/extractions";
import { backoffSeconds } from "./retry";
import { shardDatabaseOf } from "../storage/shards";

/**
 * The extraction consumer: after a boundary settles, the durable facts of its frozen slice are
 * merged into the conversation's pages under `extracted/` for the agent, each version with the
 * facts' sources. The pages are the conversation's: they live on its shard beside the log they
 * cite (migrations/shard/0016), and are served only as core/memory-privacy allows.
 *
 * - A run already recorded complete is done: a redelivered job, or a copy the conversation's
 *   object sent again while the extraction looked unseen (`durable/extraction-watch`), pays no
 *   second model call.
 * - The slice is the settled boundary's packet, re-read and re-verified from R2 by its hash. The
 *   model is sent the compactor's request for that packet, then the extractor's instructions
 *   (`extractorMessages`), so a provider's prompt cache serves the shared part.
 * - Merging is idempotent by source event, so a job redelivered mid-run writes no second version.
 * - A model error or an unusable reply is a failed attempt: a failed run event and an incident,
 *   then the consumer's retry with backoff. Nothing here writes to the chain or waits on it.
 */

type Outcome = { kind: "done" } | { kind: "retry"; delaySeconds: number };

/** Merging re-reads the head and tries again when another extraction moved it meanwhile. */
const MAX_MERGE_ATTEMPTS = 5;

export async function extract(env: Env, job: ExtractJob, attempts: number): Promise<Outcome> {
  const runId = extractionRunId(job.runId);
  const started = Date.now();
  const logged = { conversationId: job.conversationId, agentId: job.agentId, runId };
  const failed = async (code: string, message: string, retryAfter: number | null = null): Promise<Outcome> => {
    logger.warn("extraction", { ...logged, outcome: "failed", code, ms: Date.now() - started });
    await recordExtractionFailure(env, job, attempts, code, message);
    return { kind: "retry", delaySeconds: backoffSeconds(env, attempts, retryAfter) };
  };

  const shard = await shardDatabaseOf(env, job.conversationId);
  if (await extractionRecorded(shard, runId)) {
    logger.info("extraction", { ...logged, outcome: "already_recorded" });
    return { kind: "done" };
  }
  const packet = await settledSlice(env, job);
  if (!packet.ok) return failed(packet.error.code, packet.error.message);
  const seqs = packet.value.frozen.turns.flatMap((t) => turnSeq(t.id) ?? []);
  const turns = sliceTurns(packet.value.frozen.turns, await readEventHashes(shard, job.conversationId, seqs));
  if (!turns.ok) return failed(`slice_${turns.error.reason}`, `the frozen slice of ${job.boundaryId} does not match the log`);

  const extracted = await runExtractor(env, packet.value, turns.value, job.model, job.profile);
  if (!extracted.ok) return failed(extracted.error.code, extracted.error.message, extracted.error.retryAfterSeconds);

  const now = new Date();
  const versionsWritten = await mergeIntoPages(shard, job, runId, factsByPage(extracted.value.facts), now);
  const { provider, model, usage } = extracted.value;
  await recordExtractionRun(shard, { runId, conversationId: job.conversationId, agentId: job.agentId, boundaryId: job.boundaryId, provider, model, usage, facts: extracted.value.facts.length, versionsWritten }, now);
  logger.info("extraction", { ...logged, outcome: "extracted", facts: extracted.value.facts.length, versionsWritten, inputTokens: usage?.inputTokens, outputTokens: usage?.outputTokens, ms: Date.now() - started });
  return { kind: "done" };
}

/**
 * Merges each page's facts into its head, all pages in one read and one write (`writeMergedVersions`:
 * its statements do not grow with the pages), again for the pages whose head another extraction
 * moved meanwhile; returns how many versions were written (a page that already held every fact gets none).
 */
async function mergeIntoPages(db: D1Database, job: ExtractJob, runId: string, byPage: ReadonlyMap<string, readonly ExtractedFact[]>, now: Date): Promise<number> {
  let pending = [...byPage.keys()];
  let written = 0;
  for (let attempt = 0; attempt < MAX_MERGE_ATTEMPTS && pending.length > 0; attempt++) {
    const heads = await readPageHeads(db, job.conversationId, job.agentId, pending);
    const merged = pending.flatMap((path) => {
      const head = heads.get(path);
      const result = mergeFacts(path, head?.content, byPage.get(path) ?? []);
      return result.changed ? [{ path, head, content: result.content, provenance: provenanceRows(result.current, job.conversationId, runId) }] : [];
    });
    const done = await writeMergedVersions(db, job.conversationId, job.agentId, merged, now);
    written += done.size;
    pending = merged.filter((page) => !done.has(page.path)).map((page) => page.path);
  }
  if (pending.length > 0) throw new Error(`${pending.length} memory page(s) of ${job.conversationId}/${job.agentId} kept moving during ${MAX_MERGE_ATTEMPTS} merges`);
  return written;
}

/** The packet the settled boundary was compacted from, verified by the hash the boundary binds. */
async function settledSlice(env: Env, job: ExtractJob): Promise<Result<Packet, { code: string; message: string }>> {
  const boundary = await readBoundaryByRun(await shardDatabaseOf(env, job.conversationId), job.runId);
  if (boundary === undefined || boundary.body.id !== job.boundaryId) return { ok: false, error: { code: "boundary_missing", message: `no settled boundary ${job.boundaryId} for run ${job.runId}` } };
  const read = await readPacket(env.DOCUMENTS, boundary.body.packet.key, boundary.body.packet.hash);
  if (!read.ok && read.reason !== "invalid") return { ok: false, error: { code: `packet_${read.reason}`, message: `the packet of ${job.boundaryId} could not be verified` } };
  if (!read.ok || read.packet.conversationId !== job.conversationId || read.packet.agentId !== job.agentId) {
    return { ok: false, error: { code: "packet_invalid", message: `the packet of ${job.boundaryId} does not match its job` } };
  }
  return ok(read.packet);
}

/** A failed attempt: a failed run event in the conversation's log and an incident, both private. */
export async function recordExtractionFailure(env: Env, job: ExtractJob, attempts: number, code: string, message: string): Promise<void> {
  const runId = extractionRunId(job.runId);
  await appendToConversation(env, { conversationId: job.conversationId, events: [failedExtractionEvent(job.compactorId, runId, job.boundaryId, attempts, code, message)] });
  await recordIncident(env, {
    conversationId: job.conversationId,
    agentId: job.agentId,
    runId,
    kind: "extraction_failure",
    code: code.slice(0, 64),
    message: opsText`attempt ${attempts}: ${code.slice(0, 64)}`,
    detail: message,
    createdAt: new Date().toISOString(),
  });
}

/** Retries exhausted: one last incident; the pages stay as the last successful extraction left them. */
export async function abandonExtraction(env: Env, job: ExtractJob, attempts: number): Promise<void> {
  await recordIncident(env, {
    conversationId: job.conversationId,
    agentId: job.agentId,
    runId: extractionRunId(job.runId),
    kind: "extraction_failure",
    code: "retries_exhausted",
    message: opsText`extraction of ${job.boundaryId} abandoned after ${attempts} dead-letter attempt(s)`,
    createdAt: new Date().toISOString(),
  });
}
