-- framework.recompilation: the workload's program recompiled (shape changes,
-- XLA/torch.compile) at the onset or during the slowdown.
SELECT slowdown_id, 'framework.recompilation' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat(CAST(count(*) AS VARCHAR), ' recompilation(s): ', first_value(message ORDER BY time))
    AS summary
FROM symptom_events
WHERE scope = 'workload' AND kind = 'recompile'
GROUP BY slowdown_id;
