-- orchestrator.scheduling_failure: the workload's pods could not be placed
-- (FailedScheduling: insufficient nvidia.com/gpu, taints, affinity). A pod the scheduler
-- placed within 2 minutes of the failure waited for resources being freed (a rollout's
-- new pod for its old one's GPUs): that wait is not the slowdown's cause.
WITH placed_soon AS (
  SELECT DISTINCT f.slowdown_id, f.event_id
  FROM symptom_events f
  JOIN symptom_events p ON p.slowdown_id = f.slowdown_id AND p.kind = 'scheduled'
    AND p.pod = f.pod AND p.time >= f.time AND p.time <= f.time + INTERVAL '2 minutes'
  WHERE f.kind = 'failed_scheduling' AND f.pod IS NOT NULL
)
SELECT e.slowdown_id, 'orchestrator.scheduling_failure' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(e.time) AS time,
  array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
  concat('Pods of ', coalesce(min(e.namespace), ''), '/', min(e.workload), ' could not be scheduled (',
    CAST(count(*) AS VARCHAR), 'x): ', first_value(e.message ORDER BY e.time, e.event_id)) AS summary
FROM symptom_events e
LEFT JOIN placed_soon s ON s.slowdown_id = e.slowdown_id AND s.event_id = e.event_id
WHERE e.scope = 'workload' AND e.kind = 'failed_scheduling' AND s.event_id IS NULL
GROUP BY e.slowdown_id;
