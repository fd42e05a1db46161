-- infrastructure.host_maintenance: planned host maintenance or repair on a node of the
-- workload (GKE MaintenanceEvent / TerminationEvent, AutoRepair, HostError, a cordon for
-- maintenance).
SELECT slowdown_id, 'infrastructure.host_maintenance' AS cause, min(scope) AS scope, node,
  CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Host maintenance on ', node, ': ',
    coalesce(first_value(message ORDER BY time, event_id), first_value(reason ORDER BY time, event_id))) AS summary
FROM symptom_events
WHERE (kind = 'maintenance'
       OR reason IN ('MaintenanceEvent', 'TerminationEvent', 'AutoRepair', 'HostError'))
  AND scope IN ('gpu', 'node', 'workload_nodes', 'workload')
GROUP BY slowdown_id, node;
