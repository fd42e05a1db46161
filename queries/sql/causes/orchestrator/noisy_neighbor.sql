-- orchestrator.noisy_neighbor: a pod of another workload was placed on a node (or GPU)
-- where the workload's own pod was running, before the onset (or within the 10 minutes
-- a pace regression's onset may lag the change).
SELECT e.slowdown_id, 'orchestrator.noisy_neighbor' AS cause, min(e.scope) AS scope, e.node,
  CAST(NULL AS VARCHAR) AS device, min(e.time) AS time,
  array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
  concat(coalesce(min(e.namespace), ''), '/', min(e.workload), ' placed pod ', min(e.pod),
    ' on ', e.node, ' beside ', coalesce(min(e.s_namespace), ''), '/', min(e.s_workload)) AS summary
FROM symptom_events e
JOIN pod_placements p ON p.node = e.node AND p.workload = e.s_workload
  AND (p.namespace IS NOT DISTINCT FROM e.s_namespace)
  AND p.since <= e.time AND (p.until IS NULL OR p.until > e.time)
WHERE e.kind = 'scheduled' AND e.scope IN ('gpu', 'node', 'workload_nodes')
  AND e.workload IS NOT NULL AND e.workload <> e.s_workload
  AND e.time <= e.onset + INTERVAL '10 minutes'
GROUP BY e.slowdown_id, e.node;
