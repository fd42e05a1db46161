-- infrastructure.node_failure: a node of the workload went NotReady, rebooted or stopped
-- answering.
SELECT slowdown_id, 'infrastructure.node_failure' AS cause, min(scope) AS scope, node,
  CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Node ', node, ' ', replace(first_value(kind ORDER BY time, event_id), '_', ' '),
    CASE WHEN first_value(message ORDER BY time, event_id) IS NOT NULL
      THEN concat(': ', first_value(message ORDER BY time, event_id)) END) AS summary
FROM symptom_events
WHERE kind IN ('node_not_ready', 'node_rebooted', 'node_not_responding', 'node_down')
  AND scope IN ('gpu', 'node', 'workload_nodes', 'workload')
GROUP BY slowdown_id, node;
