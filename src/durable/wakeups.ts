import type { Wake } from "../core/wakeups";
import { earliestWake, wakeKey, wakeSchema } from "../core/wakeups";

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
