-- Inspector sessions. The browser holds an opaque random session id, never an API token; only the
-- id's SHA-256 is stored, bound to the hash of the token that signed in, with an expiry. A session
-- is refused once it expires, once logout revokes it, or once its token is revoked: the lookup
-- joins `api_tokens` and needs both unrevoked, and the trigger below also marks the token's
-- sessions revoked, so the stored state says so too.
CREATE TABLE inspector_sessions (
  session_hash TEXT PRIMARY KEY CHECK (length(session_hash) = 64),
  token_hash TEXT NOT NULL REFERENCES api_tokens (token_hash),
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL CHECK (expires_at > created_at),
  revoked_at TEXT
);
CREATE INDEX inspector_sessions_by_token ON inspector_sessions (token_hash);
CREATE INDEX inspector_sessions_by_expiry ON inspector_sessions (expires_at);

CREATE TRIGGER inspector_sessions_end_with_their_token AFTER UPDATE OF revoked_at ON api_tokens
WHEN NEW.revoked_at IS NOT NULL
BEGIN
  UPDATE inspector_sessions SET revoked_at = NEW.revoked_at WHERE token_hash = NEW.token_hash AND revoked_at IS NULL;
END;
