-- infrastructure.gpu_memory_error: uncorrectable or accumulating GPU memory errors
-- (Xid 48, 63, 64, 92, 94, 95, 140; ECC error events) on the workload's GPUs or nodes.
SELECT slowdown_id, 'infrastructure.gpu_memory_error' AS cause, min(scope) AS scope, node,
  device, min(time) AS time, array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat(CAST(count(*) AS VARCHAR), ' GPU memory error(s) on ', node,
    CASE WHEN device IS NOT NULL THEN concat(' GPU ', device) END, ': ',
    first_value(message ORDER BY time, event_id)) AS summary
FROM (SELECT *, coalesce(attrs['xid'], reason) AS xid FROM symptom_events
      WHERE kind IN ('xid', 'ecc_error') AND scope IN ('gpu', 'node', 'workload_nodes', 'workload')) x
WHERE kind = 'ecc_error' OR xid IN ('48', '63', '64', '92', '94', '95', '140')
GROUP BY slowdown_id, node, device;
