-- orchestrator.eviction: evicted by an orchestrator policy — not for preemption and not
-- for the node's health: Kueue PodsReadyTimeout, API eviction or drain, the descheduler
-- (`Descheduled`), requeue limits. A drain shows as a cordon (`NodeNotSchedulable`) of
-- one of the workload's nodes followed by the `Killing` of its pod there, with no
-- maintenance, pressure, NotReady or reboot of that node to explain it.
WITH policy AS (
  SELECT slowdown_id, time, event_id, namespace, workload, reason, message
  FROM symptom_events
  WHERE scope = 'workload' AND (kind IN ('evicted', 'requeued', 'descheduled')
      OR reason IN ('Descheduled', 'Evicted', 'EvictionByEvictionAPI', 'PodsReadyTimeout'))
    AND coalesce(reason, '') NOT IN ('Preempted', 'InClusterQueue', 'InCohortReclamation',
      'InCohortReclaimWhileBorrowing', 'InCohortFairSharing', 'WorkloadSliceReplaced')
    AND attrs['preemption_reason'] IS NULL
    AND coalesce(attrs['preemptor_workload'], attrs['preemptor']) IS NULL
    AND lower(coalesce(message, '')) NOT LIKE '%preempt%'
    AND lower(coalesce(message, '')) NOT LIKE '%low on resource%'
),
cordons AS (
  SELECT slowdown_id, node, time, event_id
  FROM symptom_events
  WHERE kind = 'node_cordoned' AND scope IN ('gpu', 'node', 'workload_nodes')
),
unhealthy AS (
  SELECT DISTINCT slowdown_id, node
  FROM symptom_events
  WHERE node IS NOT NULL
    AND (kind IN ('maintenance', 'node_termination', 'node_not_ready', 'rebooted', 'node_shutdown',
                  'memory_pressure', 'disk_pressure', 'pid_pressure', 'eviction_threshold_met',
                  'taint_manager_eviction', 'xid')
         OR reason IN ('MaintenanceEvent', 'TerminationEvent', 'AutoRepair', 'HostError'))
),
drained AS (
  SELECT c.slowdown_id, k.time, c.time AS cordon_time, k.event_id AS killed_id,
    c.event_id AS cordon_id, k.namespace, k.workload, c.node
  FROM cordons c
  JOIN symptom_events k ON k.slowdown_id = c.slowdown_id AND k.scope = 'workload'
    AND k.kind = 'killing' AND (k.node = c.node OR k.node IS NULL)
    AND k.time >= c.time AND k.time <= c.time + INTERVAL '30 minutes'
  LEFT JOIN unhealthy u ON u.slowdown_id = c.slowdown_id AND u.node = c.node
  WHERE u.node IS NULL
),
evidence AS (
  SELECT slowdown_id, time, event_id, namespace, workload,
    concat(' evicted: ', coalesce(reason, ''),
      CASE WHEN message IS NOT NULL THEN concat(' — ', message) END) AS what
  FROM policy
  UNION ALL
  SELECT slowdown_id, time, killed_id, namespace, workload,
    concat(' drained: ', node, ' cordoned, then its pod there killed') AS what
  FROM drained
  UNION ALL
  -- the cordon dated when it came: the drain began there
  SELECT slowdown_id, min(cordon_time), cordon_id, min(namespace), min(workload),
    concat(' drained: ', min(node), ' cordoned, then its pod there killed') AS what
  FROM drained
  GROUP BY slowdown_id, cordon_id
)
SELECT slowdown_id, 'orchestrator.eviction' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat(coalesce(max(namespace), ''), '/', max(workload), first_value(what ORDER BY time, event_id)) AS summary
FROM evidence
GROUP BY slowdown_id;
