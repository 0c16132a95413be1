/**
 * The declarations' revision (migrations/control/0014 and migrations/shard/0014): a counter the
 * control database moves inside every statement that writes a declaration or a source row, and a
 * copy of it each shard keeps, so the one-round-trip append checks it inside its own write. Equal
 * revisions mean the same declarations. Both databases hold the same one-row table, so its
 * statements live here, beside neither.
 */

export function declarationRevisionStatement(db: D1Database): D1PreparedStatement {
  return db.prepare("SELECT revision FROM declaration_revision WHERE id = 1");
}

/** The revision a `declarationRevisionStatement` result reads (0 before any declaration). */
export function revisionOf(result: D1Result | undefined): number {
  const row = result?.results[0] as { revision?: unknown } | undefined;
  return typeof row?.revision === "number" ? row.revision : 0;
}

/** Raises a shard's copy of the revision to at least `revision`; it never goes down. */
export function raiseRevisionStatement(shard: D1Database, revision: number): D1PreparedStatement {
  return shard.prepare("UPDATE declaration_revision SET revision = MAX(revision, ?) WHERE id = 1").bind(revision);
}
