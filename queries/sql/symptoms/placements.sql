-- Where each workload ran inside the window: pod placements (scheduled .. killed) and the
-- nodes and GPUs its metrics name, as (namespace, workload, pod, node, device, since,
-- until) rows; the analyzer derives each symptom's nodes, GPUs and pods from them. A pod
-- whose scheduling is not in the data (it started before the window, or the scheduler's
-- events were not shipped) is placed by the other records that name its node: the
-- inventory's Pod (`pod_placed`) and the kubelet's events for it, from the first of them.
SELECT namespace, workload, pod, node, CAST(NULL AS VARCHAR) AS device, since,
  coalesce(until, $to) AS until
FROM pod_placements
WHERE workload IS NOT NULL AND since <= $to AND (until IS NULL OR until >= $from)
UNION ALL
SELECT namespace, workload, pod, node, device, since, until
FROM workload_devices
WHERE since <= $to AND until >= $from
UNION ALL
SELECT e.namespace, e.workload, e.pod, e.node, CAST(NULL AS VARCHAR) AS device,
  min(e.time) AS since, max($to) AS until
FROM events e
LEFT JOIN (SELECT DISTINCT namespace, pod FROM pod_placements) p
  ON p.pod = e.pod AND (p.namespace IS NOT DISTINCT FROM e.namespace)
WHERE p.pod IS NULL AND e.workload IS NOT NULL AND e.pod IS NOT NULL AND e.node IS NOT NULL
  AND e.kind IN ('pod_placed', 'container_started', 'container_created', 'image_pulled',
                 'image_pulling', 'pod_running')
  AND e.time <= $to
GROUP BY e.namespace, e.workload, e.pod, e.node
ORDER BY namespace, workload, node, device, pod, since;
