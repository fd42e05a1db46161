-- orchestrator.oom_killed: a container of the workload was OOM-killed and restarted.
SELECT slowdown_id, 'orchestrator.oom_killed' AS cause, min(scope) AS scope, min(node) AS node,
  CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('OOM kill of ', coalesce(min(pod), min(workload), 'a process'),
    CASE WHEN min(node) IS NOT NULL THEN concat(' on ', min(node)) END,
    CASE WHEN count(*) > 1 THEN concat(' (', CAST(count(*) AS VARCHAR), 'x)') END) AS summary
FROM symptom_events
WHERE kind = 'oom_killed' AND scope = 'workload'
GROUP BY slowdown_id;
