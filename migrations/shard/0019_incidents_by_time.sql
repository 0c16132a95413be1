-- The fleet's incidents, newest first across every shard (`GET /v1/ops/incidents`, src/core/ops.ts):
-- each shard is read in `last_seen_at` order from a position, which this index serves without a
-- sort or a walk of the table, however many incidents a shard has kept.
CREATE INDEX incidents_by_last_seen ON incidents (last_seen_at, id);
