-- The boundaries a shard settled since a time, one range: the fleet page's lag chart
-- (`storage/shard/fleet` `readLagCells`) scanned every boundary the shard ever settled to find the
-- last day's. `boundaries_by_time` (0025) orders them by time within each chain only.
CREATE INDEX boundaries_settled ON boundaries (created_at);
