-- orchestrator.scheduling_failure: the workload's pods could not be placed
-- (FailedScheduling: insufficient nvidia.com/gpu, taints, affinity).
SELECT slowdown_id, 'orchestrator.scheduling_failure' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Pods of ', coalesce(min(namespace), ''), '/', min(workload), ' could not be scheduled (',
    CAST(count(*) AS VARCHAR), 'x): ', first_value(message ORDER BY time, event_id)) AS summary
FROM symptom_events
WHERE scope = 'workload' AND kind = 'failed_scheduling'
GROUP BY slowdown_id;
