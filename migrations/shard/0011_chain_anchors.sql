-- The chain's head is anchored in the append-only log: a completed compactor run carries
-- `anchor` { epochId, position, boundaryId, boundaryHash, contentHash } for the boundary it
-- settled. This index finds an epoch's newest anchor (what the head must be) in one lookup on the
-- context path, and being UNIQUE it makes a second anchor for the same position of an epoch
-- unstorable: after a head row was deleted by hand, no successor of the older row can be settled
-- into the log in its place. Runs without an anchor index as NULLs, which UNIQUE lets repeat.
CREATE UNIQUE INDEX events_chain_anchor ON events (
  conversation_id,
  json_extract(body, '$.anchor.epochId'),
  json_extract(body, '$.anchor.position')
) WHERE kind = 'run';
