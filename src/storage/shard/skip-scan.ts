/**
 * A walk over the distinct (outer, inner) pairs of an index, in its order, one seek or two a step:
 * the next inner value under the same outer one, else the first inner value of the next outer one.
 * For a read that must cost the pairs it visits, not the rows under each pair (a row-value seek
 * past `(outer, inner)` steps over every row that shares the pair, which grows with the history).
 *
 * `table` is the table with its alias `n` and `scope` a condition on `n` (`1` for none); the index
 * must lead with the scope's columns, then `outer`, then `inner`.
 */
export interface PairIndex {
  readonly table: string;
  readonly scope: string;
  readonly outer: string;
  readonly inner: string;
}

/** SQL for the pair after (`outer`, `inner`) (expressions), as the two columns of a select list; both NULL past the last. */
export function nextPair({ table, scope, outer: o, inner: i }: PairIndex, outer: string, inner: string): string {
  const first = (where: string) => `(SELECT MIN(n.${i}) FROM ${table} n WHERE ${scope} AND ${where})`;
  const sameNext = first(`n.${o} = ${outer} AND n.${i} > ${inner}`);
  const nextOuter = `(SELECT MIN(n.${o}) FROM ${table} n WHERE ${scope} AND n.${o} > ${outer})`;
  return `CASE WHEN ${sameNext} IS NOT NULL THEN ${outer} ELSE ${nextOuter} END, COALESCE(${sameNext}, ${first(`n.${o} = ${nextOuter}`)})`;
}
