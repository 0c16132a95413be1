-- Where each conversation lives. Per-conversation data (events, runs, plans, boundaries, anchors,
-- incidents, the turn index) is kept on one of the deployment's shard databases, bound as
-- DB_SHARD_0, DB_SHARD_1, …; this row says which one, written when the conversation is first seen
-- and never changed, so adding a shard moves no conversation (src/storage/shards.ts).
CREATE TABLE conversation_placements (
  conversation_id TEXT PRIMARY KEY CHECK (length(conversation_id) BETWEEN 1 AND 512),
  shard TEXT NOT NULL CHECK (shard GLOB 'DB_SHARD_[0-9]*' AND shard NOT GLOB 'DB_SHARD_*[^0-9]*'),
  placed_at TEXT NOT NULL
);
-- The inspector lists conversations from here, in id order, without reading any shard.
CREATE INDEX conversation_placements_by_shard ON conversation_placements (shard, conversation_id);

CREATE TRIGGER conversation_placements_immutable_update BEFORE UPDATE ON conversation_placements
BEGIN
  SELECT RAISE(ABORT, 'conversation_placements: a conversation never moves');
END;
CREATE TRIGGER conversation_placements_immutable_delete BEFORE DELETE ON conversation_placements
BEGIN
  SELECT RAISE(ABORT, 'conversation_placements: a conversation never moves');
END;
