-- infrastructure.host_resource_pressure: memory, disk or PID pressure on a node of the
-- workload (the node conditions, the kubelet's EvictionThresholdMet), or kubelet
-- evictions "The node was low on resource". Hung tasks in its kernel log corroborate it,
-- but alone they are not pressure: they also precede node failures and accompany
-- storage stalls.
SELECT slowdown_id, 'infrastructure.host_resource_pressure' AS cause, min(scope) AS scope,
  node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Resource pressure on ', coalesce(node, 'the node'), ': ',
    coalesce((array_agg(message ORDER BY time, event_id) FILTER (WHERE kind <> 'hung_task' AND message IS NOT NULL))[1],
             (array_agg(kind ORDER BY time, event_id) FILTER (WHERE kind <> 'hung_task'))[1])) AS summary
FROM symptom_events
WHERE ((kind IN ('memory_pressure', 'disk_pressure', 'pid_pressure', 'eviction_threshold_met',
                 'hung_task')
        AND scope IN ('gpu', 'node', 'workload_nodes', 'workload'))
    OR (kind = 'evicted' AND scope IN ('workload', 'gpu', 'node')
        AND lower(coalesce(message, '')) LIKE '%low on resource%'))
GROUP BY slowdown_id, node
HAVING count(CASE WHEN kind <> 'hung_task' THEN 1 END) > 0;
