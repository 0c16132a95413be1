/**
 * A wait with a bound: work that may hang (a binding call whose answer never comes) is raced
 * against a timer, and the caller gets on with `DEADLINE_PASSED`. The work is not stopped; whatever
 * it settles to later is dropped.
 */

export const DEADLINE_PASSED: unique symbol = Symbol("deadline passed");

/** What `work` settles to, or `DEADLINE_PASSED` when it has not settled within `ms`. */
export async function withinDeadline<T>(work: Promise<T>, ms: number): Promise<T | typeof DEADLINE_PASSED> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<typeof DEADLINE_PASSED>((resolve) => {
    timer = setTimeout(() => resolve(DEADLINE_PASSED), Math.max(0, ms));
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
