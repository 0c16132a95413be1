-- An incident's message is what an operator reads, across tenants (`GET /v1/ops/incidents`, a
-- token scoped `ops`): from here on it carries codes, ids and counts only (src/core/ops-text.ts).
-- What a counterpart said (a bot's error page quoting the user, a provider's error text, Telegram's
-- description) is the incident's `detail`, served only with the conversation's incidents, to a
-- token for that conversation.
--
-- Rows written before this migration may quote such text in `message`: it moves to `detail`, and
-- `message` becomes the row's kind and code. One pass over the table, run once by `npm run migrate`.
ALTER TABLE incidents ADD COLUMN detail TEXT;
UPDATE incidents SET detail = message, message = kind || ' ' || code;
