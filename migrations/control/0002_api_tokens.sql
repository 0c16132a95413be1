-- Bearer tokens for the /v1 API. Only the SHA-256 of a token is stored; the token itself is
-- shown once when it is created. `scopes` is a JSON array of conversation patterns
-- (`api:acme:*`, `telegram:123:*`, `*`), and a token reaches only the conversations they match.
CREATE TABLE api_tokens (
  token_hash TEXT PRIMARY KEY CHECK (length(token_hash) = 64),
  name TEXT NOT NULL,
  scopes TEXT NOT NULL CHECK (json_valid(scopes) AND json_type(scopes) = 'array'),
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
