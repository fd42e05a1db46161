-- infrastructure.nvlink_error: NVLink or NVSwitch degraded (Xid 74, 145, 149; NVLink
-- error events) on the workload's GPUs or nodes.
SELECT slowdown_id, 'infrastructure.nvlink_error' AS cause, min(scope) AS scope, node, device,
  min(time) AS time, array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('NVLink error on ', node, CASE WHEN device IS NOT NULL THEN concat(' GPU ', device) END,
    ': ', first_value(message ORDER BY time, event_id)) AS summary
FROM (SELECT *, coalesce(attrs['xid'], reason) AS xid FROM symptom_events
      WHERE kind IN ('xid', 'nvlink_error') AND scope IN ('gpu', 'node', 'workload_nodes', 'workload')) x
WHERE kind = 'nvlink_error' OR xid IN ('74', '145', '149')
GROUP BY slowdown_id, node, device;
