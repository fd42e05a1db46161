-- Workload admission intervals from Kueue and the job controllers: each lifecycle mark
-- opens a state (admitted, reserved, evicted, suspended, pending, finished) that lasts
-- until the next mark of the same workload, with the Kueue reason, priority, queue and
-- preemptor when the log holds them.
CREATE OR REPLACE VIEW workload_admissions AS
WITH marks AS (
  SELECT namespace, workload, time, kind, reason, message, event_id, attrs,
    CASE
      WHEN kind IN ('admitted', 'resumed') THEN 'admitted'
      WHEN kind = 'quota_reserved' THEN 'reserved'
      WHEN kind IN ('evicted', 'preempted') THEN 'evicted'
      WHEN kind = 'suspended' THEN 'suspended'
      WHEN kind IN ('pending', 'requeued') THEN 'pending'
      ELSE 'finished'
    END AS state
  FROM events
  WHERE workload IS NOT NULL
    AND kind IN ('admitted', 'resumed', 'quota_reserved', 'evicted', 'preempted', 'suspended',
                 'pending', 'requeued', 'finished')
)
SELECT namespace, workload, state, time AS since,
  LEAD(time) OVER (PARTITION BY namespace, workload ORDER BY time, event_id) AS until,
  kind, reason, message,
  coalesce(attrs['preemption_reason'], CASE WHEN state = 'evicted' THEN reason END) AS eviction_reason,
  coalesce(attrs['preemptor_workload'], attrs['preemptor']) AS preemptor,
  attrs['priority'] AS priority,
  coalesce(attrs['cluster_queue'], attrs['clusterqueue']) AS cluster_queue,
  attrs['queue'] AS queue,
  event_id
FROM marks;
