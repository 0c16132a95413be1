-- The log's high-water mark. Each conversation row records the sequence number of the newest event
-- ever stored for it, advanced by the insert itself and never moved back, and the next event must
-- follow it. Before this, the next number was the largest stored one plus one, so an event deleted
-- behind the service's back (its triggers dropped) from the end of the log left no trace: its
-- number was handed out again. Now such a deletion is a gap the audit names
-- (src/core/log-audit.ts), and the number is never reused.

ALTER TABLE conversations ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0 CHECK (last_seq >= 0);

UPDATE conversations SET last_seq = (SELECT COALESCE(MAX(seq), 0) FROM events WHERE events.conversation_id = conversations.id);

DROP TRIGGER events_gap_free;

CREATE TRIGGER events_gap_free BEFORE INSERT ON events
WHEN NEW.seq <> COALESCE((SELECT last_seq FROM conversations WHERE id = NEW.conversation_id), 0) + 1
BEGIN
  SELECT RAISE(ABORT, 'events: sequence must be the next number of its conversation');
END;

CREATE TRIGGER events_high_water AFTER INSERT ON events
BEGIN
  UPDATE conversations SET last_seq = NEW.seq WHERE id = NEW.conversation_id;
END;

CREATE TRIGGER conversations_high_water_advances BEFORE UPDATE OF last_seq ON conversations
WHEN NEW.last_seq <> OLD.last_seq + 1
BEGIN
  SELECT RAISE(ABORT, 'conversations: the high-water mark only advances, one event at a time');
END;
