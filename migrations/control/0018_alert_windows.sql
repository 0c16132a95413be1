-- The rate limit of the operator's alerts (src/core/alerts.ts; docs/OPERATIONS.md, "Alerts"): at
-- most ALERTS_PER_WINDOW alerts per incident kind in each window, across every isolate. One row per
-- (kind, window start) counts the incidents of that kind the window was asked to alert; the count
-- is raised by an upsert that returns it, so two isolates can never both find themselves under the
-- limit with the same count. Each alert that goes out deletes its kind's rows of earlier windows and
-- reports how many of their incidents were held back (src/storage/alert-window-store.ts), so the
-- table keeps about one row per kind.
-- `window_start` is the window's start as an ISO 8601 UTC timestamp, so text order is time order.
CREATE TABLE alert_windows (
  kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 64),
  window_start TEXT NOT NULL CHECK (length(window_start) = 24),
  count INTEGER NOT NULL CHECK (count >= 1),
  PRIMARY KEY (kind, window_start)
) WITHOUT ROWID;
