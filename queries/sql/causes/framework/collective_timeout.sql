-- framework.collective_timeout: a collective of the workload hung until the NCCL
-- watchdog fired.
SELECT slowdown_id, 'framework.collective_timeout' AS cause, 'workload' AS scope,
  min(node) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Collective timeout (', CAST(count(*) AS VARCHAR), ' watchdog report(s)): ',
    first_value(message ORDER BY time, event_id)) AS summary
FROM symptom_events
WHERE scope = 'workload' AND kind = 'collective_timeout'
GROUP BY slowdown_id;
