-- Where each workload ran inside the window: pod placements (scheduled .. killed) and the
-- nodes and GPUs its metrics name, as (namespace, workload, pod, node, device, since,
-- until) rows; the analyzer derives each symptom's nodes, GPUs and pods from them.
SELECT namespace, workload, pod, node, CAST(NULL AS VARCHAR) AS device, since,
  coalesce(until, $to) AS until
FROM pod_placements
WHERE workload IS NOT NULL AND since <= $to AND (until IS NULL OR until >= $from)
UNION ALL
SELECT namespace, workload, pod, node, device, since, until
FROM workload_devices
WHERE since <= $to AND until >= $from
ORDER BY namespace, workload, node, device, pod, since;
