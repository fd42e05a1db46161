-- orchestrator.scale_change: the workload's own replica count or slice changed: a
-- `scaled` Deployment/Job/JobSet, or its controller deleting some of its pods
-- (SuccessfulDelete) or a JobSet's child Job before it finished, when nothing evicted,
-- preempted or suspended it around then. Not a cause of a pending replica: the scale-up
-- that created it is why it exists, not why it waits (quota, capacity, an image pull say
-- that). Of a serving workload's latency, only fewer replicas are a cause: a scale-up
-- during it is the autoscaler answering it.
-- A rollout is not a scale change: its steps (`symptom_rollouts`) replace pods at the
-- same count, and so do the pods its old ReplicaSets deleted (`framework.config_change`
-- reads a rollout as a new pod template).
WITH stops AS (
  SELECT slowdown_id, time FROM symptom_events
  WHERE scope = 'workload' AND kind IN ('evicted', 'preempted', 'suspended', 'descheduled')
)
SELECT e.slowdown_id, 'orchestrator.scale_change' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(e.time) AS time,
  array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
  concat(coalesce(min(e.namespace), ''), '/', min(e.workload), ' scaled: ',
    coalesce(first_value(e.message ORDER BY e.time, e.event_id), first_value(e.reason ORDER BY e.time, e.event_id),
      'replicas changed')) AS summary
FROM symptom_events e
LEFT JOIN stops x ON x.slowdown_id = e.slowdown_id
  AND x.time >= e.time - INTERVAL '2 minutes' AND x.time <= e.time + INTERVAL '2 minutes'
LEFT JOIN symptom_rollouts rs
  ON rs.slowdown_id = e.slowdown_id AND rs.event_id = e.event_id
LEFT JOIN (SELECT DISTINCT slowdown_id, replica_set FROM symptom_rollouts) rd
  ON rd.slowdown_id = e.slowdown_id AND e.kind = 'deleted'
  AND e.attrs['involved_kind'] = 'ReplicaSet' AND rd.replica_set = e.attrs['involved_name']
WHERE e.scope = 'workload' AND e.symptom_kind NOT IN ('pending', 'capacity_shortfall')
  AND (e.kind IN ('scaled', 'slice_replaced')
       OR (e.kind = 'deleted' AND (lower(coalesce(e.attrs['child_kind'], '')) = 'pod'
           OR (lower(coalesce(e.attrs['child_kind'], '')) = 'job'
               AND e.attrs['workload_kind'] = 'JobSet'))))
  AND x.slowdown_id IS NULL
  AND rs.slowdown_id IS NULL AND rd.slowdown_id IS NULL
  AND NOT (e.symptom_kind = 'latency_regression' AND coalesce(e.attrs['direction'], '') = 'up')
GROUP BY e.slowdown_id;
