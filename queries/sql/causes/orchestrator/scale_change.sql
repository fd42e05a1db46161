-- orchestrator.scale_change: the workload's own replica count or slice changed.
SELECT slowdown_id, 'orchestrator.scale_change' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat(coalesce(min(namespace), ''), '/', min(workload), ' scaled: ',
    coalesce(first_value(message ORDER BY time), first_value(reason ORDER BY time), 'replicas changed'))
    AS summary
FROM symptom_events
WHERE scope = 'workload' AND kind IN ('scaled', 'slice_replaced')
GROUP BY slowdown_id;
