-- infrastructure.host_resource_pressure: memory, disk or PID pressure on a node of the
-- workload, hung tasks in its kernel log, or kubelet evictions "The node was low on
-- resource".
SELECT slowdown_id, 'infrastructure.host_resource_pressure' AS cause, min(scope) AS scope,
  node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Resource pressure on ', coalesce(node, 'the node'), ': ',
    coalesce(first_value(message ORDER BY time), first_value(kind ORDER BY time))) AS summary
FROM symptom_events
WHERE ((kind IN ('memory_pressure', 'disk_pressure', 'pid_pressure', 'hung_task')
        AND scope IN ('gpu', 'node', 'workload_nodes'))
    OR (kind = 'evicted' AND scope IN ('workload', 'gpu', 'node')
        AND lower(coalesce(message, '')) LIKE '%low on resource%'))
GROUP BY slowdown_id, node;
