/**
 * At most `limit` of the works handed to the returned function run at once; the rest wait, in the
 * order they were handed over, and each starts when one before it has settled (fulfilled or
 * rejected). What a work returns or throws passes through unchanged.
 */
export function concurrencyLimit(limit: number): <T>(work: () => Promise<T>) => Promise<T> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`a concurrency limit is a whole number of at least 1, not ${limit}`);
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = (): void => {
    running -= 1;
    waiting.shift()?.();
  };
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    running += 1;
    try {
      return await work();
    } finally {
      release();
    }
  };
}
