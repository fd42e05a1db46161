-- orchestrator.crash_loop: the workload's containers crash and back off (BackOff,
-- CrashLoopBackOff, BackoffLimitExceeded).
SELECT slowdown_id, 'orchestrator.crash_loop' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Containers of ', coalesce(min(namespace), ''), '/', min(workload), ' crash-looping (',
    CAST(count(*) AS VARCHAR), ' back-off event(s))') AS summary
FROM symptom_events
WHERE scope = 'workload'
  AND (kind IN ('back_off', 'crash_loop')
       OR reason IN ('BackOff', 'CrashLoopBackOff', 'BackoffLimitExceeded'))
  AND lower(coalesce(message, '')) NOT LIKE '%image%'
GROUP BY slowdown_id;
