-- Replies by the message they answer: a page of turns finds every reply to its messages, wherever
-- in the log the reply arrived, without reading the log (`GET …/turns`). A partial expression
-- index like 0005's: a query uses it when it repeats the kind filter and the expression.
CREATE INDEX events_proposal_by_reply ON events (conversation_id, json_extract(body, '$.replyToMessageId')) WHERE kind = 'proposal';
