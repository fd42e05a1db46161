-- infrastructure.gpu_failure: a GPU the workload used failed or fell off the bus
-- (Xid 79; 119/120 GSP errors; 154 recovery action) on its GPU or node.
-- When nothing placed the workload at the onset of a stall or restart (`s_unplaced`: its
-- pods placed before the data begins, scrapes without pod labels), a GPU that failed
-- anywhere in the cluster within two minutes of the onset is evidence too, at the
-- cluster's reach: a job dies with the hardware it ran on.
SELECT slowdown_id, 'infrastructure.gpu_failure' AS cause, min(scope) AS scope, node, device,
  min(time) AS time, array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Xid ', first_value(xid ORDER BY time, event_id), ' on ', node,
    CASE WHEN device IS NOT NULL THEN concat(' GPU ', device) END, ': ',
    first_value(message ORDER BY time, event_id)) AS summary
FROM (SELECT *, coalesce(attrs['xid'], reason) AS xid FROM symptom_events
      WHERE kind = 'xid' AND (scope IN ('gpu', 'node', 'workload_nodes', 'workload')
          OR (scope = 'cluster' AND s_unplaced IS TRUE AND symptom_kind IN ('stall', 'restart')
              AND time >= onset - INTERVAL '2 minutes' AND time <= onset + INTERVAL '2 minutes'))) x
WHERE xid IN ('79', '119', '120', '154')
GROUP BY slowdown_id, node, device;
