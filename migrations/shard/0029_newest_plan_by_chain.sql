-- Each chain's newest plan, one seek: the health probe's oldest open plan (`storage/shard/ops`
-- `oldestOpenPlan`) walks the shard's chains and takes each one's newest plan, where it walked every
-- plan the shard ever made with three probes each. `compaction_plans_by_chain` (0003) orders a
-- chain's plans within each epoch; a chain's newest across its epochs needs them in one order.
CREATE INDEX compaction_plans_newest ON compaction_plans (conversation_id, agent_id, created_at);
