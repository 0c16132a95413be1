-- The anchor index (0011) held an entry for every run, the skipped ones included, as NULLs: about
-- half of all events, each an index row written and stored for nothing (a skipped run anchors no
-- head). It now holds the runs that name an anchor. The context path's anchor read compares the
-- anchor's epoch with `=`, which implies the new condition, so SQLite still serves it from here;
-- a second anchor for one position of an epoch is refused as before.
DROP INDEX events_chain_anchor;
CREATE UNIQUE INDEX events_chain_anchor ON events (
  conversation_id,
  json_extract(body, '$.anchor.epochId'),
  json_extract(body, '$.anchor.position')
) WHERE kind = 'run' AND json_extract(body, '$.anchor.epochId') IS NOT NULL;
