import type { Wake } from "../core/wakeups";
import { earliestWake, wakeKey, wakeSchema } from "../core/wakeups";
import type { WakeStreak } from "../core/wake-retries";
import { WAKE_RETRY_BASE_MS, wakeAgent, wakeFailureMessage, wakeFailureStep, wakeRun, wakeStreakSchema } from "../core/wake-retries";
import { raiseIncident } from "../incidents";
import { logger } from "../logger";
import { describeThrown } from "../core/thrown";
import { closeIncidents } from "../storage/shard/incidents";
import { shardDatabaseOf } from "../storage/shards";

/**
 * A deadline's failures in a row (`core/wake-retries`), kept beside it in the object's storage under
 * a key outside `wakeKey.prefix`, so `list` never takes it for a deadline, and it outlives evictions
 * as the deadline does.
 */
const streakKey = (key: string): string => `wake-streak:${key}`;

/** After a step failed once its write was acknowledged, bookkeeping catches up this soon. */
const CATCH_UP_MS = 1_000;

/**
 * Schedules bookkeeping to catch up (`catch_up`: every chain resumes from its newest source), for a
 * write whose outcome is unknown (if it committed, its retry is a replay that preflights nothing) or
 * a step that failed after one. Best effort: the next source's preflight also judges the whole window.
 */
export async function catchUpSoon(wakes: Wakeups, conversationId: string | undefined, now: number): Promise<void> {
  try {
    await wakes.put(wakeKey.catchUp, { kind: "catch_up", at: now + CATCH_UP_MS });
  } catch (error) {
    logger.error("step.failed", { step: "schedule_catch_up", conversationId, code: describeThrown(error).code });
  }
}

/** What the compaction engine needs of the object's deadlines (`core/wakeups`). */
export interface Wakeups {
  get(key: string): Promise<Wake | undefined>;
  put(key: string, wake: Wake): Promise<void>;
  delete(key: string): Promise<void>;
}

/**
 * The deadlines, kept in the object's own storage (durable across evictions and restarts; a
 * write is committed before the object's next output) under `wake:` keys. Every change re-arms
 * the one platform alarm to the earliest deadline, so no deadline can hide behind another's alarm.
 * A stored row that is not a wake (a format from another version) is dropped, never trusted.
 */
export class WakeupBook implements Wakeups {
  constructor(private readonly storage: DurableObjectStorage) {}

  async list(): Promise<Map<string, Wake>> {
    const rows = await this.storage.list({ prefix: wakeKey.prefix });
    const wakes = new Map<string, Wake>();
    for (const [key, value] of rows) {
      const wake = wakeSchema.safeParse(value);
      if (wake.success) wakes.set(key, wake.data);
      else await this.storage.delete(key);
    }
    return wakes;
  }

  async get(key: string): Promise<Wake | undefined> {
    const wake = wakeSchema.safeParse(await this.storage.get(key));
    return wake.success ? wake.data : undefined;
  }

  async put(key: string, wake: Wake): Promise<void> {
    await this.storage.put(key, wake);
    await this.rearm();
  }

  async delete(key: string): Promise<void> {
    if (await this.storage.delete(key)) await this.rearm();
  }

  /**
   * A due wake whose handler threw (or the preflight a `catch_up` stands in for): kept, and tried
   * again after the backoff its failures in a row call for (`core/wake-retries`). Returns the step,
   * with the streak as stored.
   */
  async failed(key: string, wake: Wake, now: number, baseMs: number): Promise<ReturnType<typeof wakeFailureStep>> {
    const step = wakeFailureStep(await this.streak(key), now, baseMs);
    await this.storage.put(streakKey(key), step.streak);
    await this.put(key, { ...wake, at: step.retryAt });
    return step;
  }

  /** Records that the incident for the streak of `key` was raised. */
  async raised(key: string, streak: WakeStreak): Promise<void> {
    await this.storage.put(streakKey(key), { ...streak, raised: true });
  }

  /** A handler that succeeded ends the streak of `key`; returns the streak it ended (undefined: none). */
  async succeeded(key: string): Promise<WakeStreak | undefined> {
    const streak = await this.streak(key);
    if (streak !== undefined) await this.storage.delete(streakKey(key));
    return streak;
  }

  async streak(key: string): Promise<WakeStreak | undefined> {
    const stored = wakeStreakSchema.safeParse(await this.storage.get(streakKey(key)));
    return stored.success ? stored.data : undefined;
  }

  /** Sets the alarm to the earliest deadline (or clears it when none is left). */
  async rearm(): Promise<number | undefined> {
    const earliest = earliestWake((await this.list()).values());
    const current = await this.storage.getAlarm();
    if (earliest === undefined) {
      if (current !== null) await this.storage.deleteAlarm();
    } else if (current !== earliest) {
      await this.storage.setAlarm(earliest);
    }
    return earliest;
  }
}

/**
 * A deadline that failed (`WakeupBook.failed`), as the operator sees it: nothing below
 * `WAKE_FAILURES_BEFORE_INCIDENT` failures in a row; from there one open `wake_failure` incident
 * (code: the deadline's kind; agent: its chain's, or none for the conversation's catch-up) that counts
 * every further failure and pages once. Raising is best effort: the deadline is already re-armed, and
 * an incident that could not be written (often the very outage that failed the handler) is raised
 * with the whole streak at the next failure.
 */
export async function wakeFailed(env: Env, book: WakeupBook, conversationId: string, key: string, wake: Wake, error: unknown, now: Date, baseMs = WAKE_RETRY_BASE_MS): Promise<void> {
  const step = await book.failed(key, wake, now.getTime(), baseMs);
  if (step.raise === undefined) return;
  try {
    await raiseIncident(
      env,
      {
        conversationId,
        agentId: wakeAgent(wake),
        runId: wakeRun(wake),
        kind: "wake_failure",
        code: wake.kind,
        ...wakeFailureMessage(wake, step.streak.failures, step.retryAt, error),
        createdAt: now.toISOString(),
      },
      step.raise,
    );
    if (!step.streak.raised) await book.raised(key, step.streak);
  } catch (raising) {
    logger.error("step.failed", { step: "raise_wake_incident", conversationId, agentId: wakeAgent(wake) ?? undefined, kind: wake.kind, code: describeThrown(raising).code });
  }
}

/** A deadline whose handler succeeded: its streak ends, and the incident it raised, if any, is closed. */
export async function wakeSucceeded(env: Env, book: WakeupBook, conversationId: string, key: string, wake: Wake): Promise<void> {
  const streak = await book.succeeded(key);
  if (streak?.raised !== true) return;
  await closeIncidents(await shardDatabaseOf(env, conversationId), conversationId, wakeAgent(wake), "wake_failure", wake.kind);
}
