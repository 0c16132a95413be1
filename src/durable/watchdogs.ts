import { planStalledSeconds, planWatchdogSeconds } from "../config";
import type { LivenessPolicy } from "../core/wakeups";
import { armWatchdog, wakeKey } from "../core/wakeups";
import type { EngineDeps } from "./engine-deps";
import type { HotChain } from "./hot-chain";

/**
 * The plan watchdog of each chain (`core/wakeups`): a deadline in the object's storage that
 * re-sends an open plan's job, so a job lost in a crash is sent again instead of stalling the chain.
 */
export class Watchdogs {
  constructor(private readonly deps: EngineDeps) {}

  liveness(): LivenessPolicy {
    const { env } = this.deps;
    return { watchdogMs: planWatchdogSeconds(env) * 1_000, stalledMs: planStalledSeconds(env) * 1_000 };
  }

  /**
   * Armed before the plan is committed: a crash between the plan's commit and its job's send
   * leaves a deadline that re-sends it (one left for a plan that never committed is dropped).
   */
  async arm(plan: { readonly agentId: string; readonly epochId: string; readonly runId: string }, now: Date): Promise<void> {
    await this.deps.wakes.put(wakeKey.watchdog(plan.agentId), armWatchdog({ ...plan, createdAt: now.getTime() }, 1, now.getTime(), this.liveness()));
  }

  /** An open plan always has a watchdog (one found open without it, after a crash, gets one now). */
  async ensure(chain: HotChain, now: Date): Promise<void> {
    const plan = chain.openPlan;
    if (plan === undefined || chain.provisional) return;
    const key = wakeKey.watchdog(plan.agentId);
    const existing = await this.deps.wakes.get(key);
    if (existing?.kind === "plan_watchdog" && existing.runId === plan.runId) return;
    await this.deps.wakes.put(key, armWatchdog({ ...plan, createdAt: Date.parse(plan.createdAt) }, 1, now.getTime(), this.liveness()));
  }

  /** Deletes the watchdog of `runId` (and only of it: a newer plan's watchdog stays). */
  async drop(agentId: string, runId: string): Promise<void> {
    const key = wakeKey.watchdog(agentId);
    const existing = await this.deps.wakes.get(key);
    if (existing?.kind === "plan_watchdog" && existing.runId === runId) await this.deps.wakes.delete(key);
  }
}
