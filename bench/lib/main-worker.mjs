// Sections 1–8 and the chain audit: the Worker the fake model compacts for, on its own fresh
// state, started and stopped here. The sections run in this order (bench/sections/, one module
// each), on one process state and one database: §2 before any history, the histories, §3 before
// §1's probes add their one-turn groups, then §1, §4, §6, §7, §5, §8 (a restart) and the audit.
import { Api } from "./api.mjs";
import { registerScenarios } from "./scenario.mjs";
import { measureAppendLatency, measureParallelAppends } from "../sections/append.mjs";
import { verifyLinkPages, verifyLongChain } from "../sections/chain-audit.mjs";
import { measureCompactionLag } from "../sections/compaction-lag.mjs";
import { measureCompactorInput } from "../sections/compactor-input.mjs";
import { measureContextLatency } from "../sections/context.mjs";
import { measureD1PerAppend } from "../sections/d1-per-append.mjs";
import { measureDuplicates } from "../sections/duplicates.mjs";
import { buildHistories, emptyHistories } from "../sections/histories.mjs";
import { measurePrefixStability } from "../sections/prefix-stability.mjs";
import { measureRehydration } from "../sections/rehydration.mjs";
import { WorkerError, applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { INSTRUMENTED_MAIN } from "./instrumented.mjs";

/**
 * @param {{
 *   root: string, appDir: string, persistDir: string, envFile: string, logPath: string,
 *   fake: Awaited<ReturnType<typeof import("../../test/fake-openai/server.ts").startFakeOpenAi>>,
 *   size: Record<string, number>, metrics: Record<string, any>, log: (line: string) => void,
 *   phase: (metric: string, body: () => Promise<void>) => Promise<void>, onStarted: () => void,
 * }} o
 */
export async function runMainWorker({ root, appDir, persistDir, envFile, logPath, fake, size, metrics, log, phase, onStarted }) {
  log("applying migrations to a fresh local D1");
  applyMigrations(root, appDir, persistDir);
  const token = createToken(root, appDir, persistDir, ["api:*", "agent:*"], "bench");
  // The fake model is the only provider: a real key in .dev.vars is never read (see scripts/lib/worker.mjs).
  await writeEnvFile(envFile, {
    OPENAI_API_KEY: "bench-not-a-real-key",
    OPENAI_BASE_URL: fake.baseUrl,
    QUEUE_RETRY_BASE_SECONDS: "0",
    COMPACTION_BACKOFF_BASE_SECONDS: "1",
    // Lets §3's metered pass ask what each context call read from D1 (only requests that ask pay).
    D1_METER: "on",
  });
  const port = await freePort(8791);
  const workerOptions = { root, appDir, persistDir, envFile, port, logPath, log, main: INSTRUMENTED_MAIN };
  /** @type {import("../../scripts/lib/worker.mjs").RunningWorker} */
  let worker = await startWorker(workerOptions);
  onStarted();
  const api = new Api(worker.url, token);
  try {
    const restart = async () => {
      await worker.stop();
      worker = await startWorker(workerOptions);
      return worker;
    };
    const ctx = { api, fake, size, log, restart, history: emptyHistories(), ...(await registerScenarios(api, log)) };

    await phase("d1PerAppend", async () => {
      metrics.d1PerAppend = await measureD1PerAppend(ctx);
    });
    await phase("histories", () => buildHistories(ctx));
    await phase("contextLatency", async () => {
      metrics.contextLatency = await measureContextLatency(ctx);
    });
    await phase("appendLatency", async () => {
      metrics.appendLatency = await measureAppendLatency(ctx);
    });
    await phase("parallelAppends", async () => {
      metrics.parallelAppends = await measureParallelAppends(ctx);
    });
    await phase("compactorInput", async () => {
      metrics.compactorInput = await measureCompactorInput(ctx);
    });
    await phase("compactionLag", async () => {
      metrics.compactionLag = measureCompactionLag(ctx);
    });
    await phase("prefixStability", async () => {
      const { stability, pacedLag } = await measurePrefixStability(ctx);
      metrics.prefixStability = stability;
      metrics.compactionLag = { ...metrics.compactionLag, paced: pacedLag };
    });
    await phase("duplicates", async () => {
      metrics.duplicates = await measureDuplicates(ctx);
    });
    await phase("rehydration", async () => {
      metrics.rehydration = await measureRehydration(ctx);
    });
    await phase("verifyBig", async () => {
      const { whole, audit } = await verifyLongChain(ctx);
      metrics.verifyBig = whole;
      metrics.verifyBig.pages = await verifyLinkPages(ctx, audit);
    });
    if (!worker.alive()) throw new WorkerError("wrangler dev exited during the run");
  } finally {
    await worker.stop();
    log("wrangler stopped");
  }
}
