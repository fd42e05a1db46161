-- infrastructure.network_degraded: NIC link flaps or errors on a node of the workload
-- (ConnectX link down/up in the kernel log, NIC error events).
SELECT slowdown_id, 'infrastructure.network_degraded' AS cause, min(scope) AS scope, node,
  CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('NIC link trouble on ', node, ' (', CAST(count(*) AS VARCHAR), ' event(s)): ',
    first_value(message ORDER BY time, event_id)) AS summary
FROM symptom_events
WHERE kind IN ('nic_link_down', 'nic_link_flap', 'nic_error')
  AND scope IN ('gpu', 'node', 'workload_nodes', 'workload')
GROUP BY slowdown_id, node;
