-- infrastructure.node_failure: a node of the workload went NotReady, rebooted or stopped
-- answering. An event on the workload's pod that names no node (the pod's own
-- `NodeNotReady`) is told by the pod.
-- When nothing placed the workload at the onset of a stall or restart (`s_unplaced`: its
-- pods placed before the data begins, scrapes without pod labels), a node that failed
-- anywhere in the cluster within two minutes of the onset is evidence too, at the
-- cluster's reach: a job dies with the hardware it ran on.
SELECT slowdown_id, 'infrastructure.node_failure' AS cause, min(scope) AS scope, node,
  CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat(CASE WHEN node IS NOT NULL THEN concat('Node ', node)
      WHEN min(pod) IS NOT NULL THEN concat('The node of pod ', min(pod))
      ELSE 'A node of the workload' END,
    ' ', replace(first_value(kind ORDER BY time, event_id), '_', ' '),
    CASE WHEN first_value(message ORDER BY time, event_id) IS NOT NULL
      THEN concat(': ', first_value(message ORDER BY time, event_id)) END) AS summary
FROM symptom_events
WHERE kind IN ('node_not_ready', 'node_rebooted', 'node_not_responding', 'node_down')
  AND (scope IN ('gpu', 'node', 'workload_nodes', 'workload')
    OR (scope = 'cluster' AND s_unplaced IS TRUE AND symptom_kind IN ('stall', 'restart')
        AND time >= onset - INTERVAL '2 minutes' AND time <= onset + INTERVAL '2 minutes'))
GROUP BY slowdown_id, node;
