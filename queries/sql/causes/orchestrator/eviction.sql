-- orchestrator.eviction: evicted by an orchestrator policy — not for preemption and not
-- for the node's health: Kueue PodsReadyTimeout, API eviction or drain, the descheduler
-- (`Descheduled`), requeue limits.
SELECT slowdown_id, 'orchestrator.eviction' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat(coalesce(min(namespace), ''), '/', min(workload), ' evicted: ',
    coalesce(first_value(reason ORDER BY time), ''),
    CASE WHEN first_value(message ORDER BY time) IS NOT NULL
      THEN concat(' — ', first_value(message ORDER BY time)) END) AS summary
FROM symptom_events
WHERE scope = 'workload' AND (kind IN ('evicted', 'requeued', 'descheduled')
    OR reason IN ('Descheduled', 'Evicted', 'EvictionByEvictionAPI', 'PodsReadyTimeout'))
  AND coalesce(reason, '') NOT IN ('Preempted', 'InClusterQueue', 'InCohortReclamation',
    'InCohortReclaimWhileBorrowing', 'InCohortFairSharing', 'WorkloadSliceReplaced')
  AND attrs['preemption_reason'] IS NULL
  AND coalesce(attrs['preemptor_workload'], attrs['preemptor']) IS NULL
  AND lower(coalesce(message, '')) NOT LIKE '%preempt%'
  AND lower(coalesce(message, '')) NOT LIKE '%low on resource%'
GROUP BY slowdown_id;
