-- The chain listing (GET …/chain) reads a page of an agent's boundaries in a conversation, oldest
-- first across epochs, after a cursor: this index serves the order, so a page reads its own rows
-- and not the chain before it.
CREATE INDEX boundaries_by_time ON boundaries (conversation_id, agent_id, created_at, position, id);
