-- Node and GPU health intervals: a node NotReady (or rebooted, unresponsive, down, under
-- maintenance, under resource pressure) until its next readiness mark; a GPU throttled
-- until its throttle reasons change; Xid and ECC errors as instants (until = since).
CREATE OR REPLACE VIEW node_health AS
WITH marks AS (
  SELECT node, device, time, kind, reason, message, event_id, attrs,
    CASE
      WHEN kind IN ('node_not_ready', 'node_rebooted', 'node_not_responding', 'node_down',
                    'node_drained') THEN 'not_ready'
      WHEN kind IN ('node_ready', 'node_resumed') THEN 'ready'
      WHEN kind = 'maintenance' THEN 'maintenance'
      WHEN kind IN ('memory_pressure', 'disk_pressure', 'pid_pressure') THEN 'pressure'
      WHEN kind IN ('clock_throttle', 'clock_throttle_cleared') THEN 'throttled'
      WHEN kind IN ('nic_link_down', 'nic_link_up') THEN 'link_down'
      ELSE kind
    END AS condition,
    CASE
      WHEN kind IN ('clock_throttle', 'clock_throttle_cleared') THEN 'throttle'
      WHEN kind IN ('nic_link_down', 'nic_link_up') THEN 'link'
      WHEN kind IN ('xid', 'ecc_error', 'nvlink_error', 'hung_task') THEN 'instant'
      ELSE 'readiness'
    END AS track
  FROM events
  WHERE node IS NOT NULL
    AND kind IN ('node_not_ready', 'node_rebooted', 'node_not_responding', 'node_down',
                 'node_drained', 'node_ready', 'node_resumed', 'maintenance', 'memory_pressure',
                 'disk_pressure', 'pid_pressure', 'clock_throttle', 'clock_throttle_cleared',
                 'nic_link_down', 'nic_link_up', 'xid', 'ecc_error', 'nvlink_error', 'hung_task')
),
seq AS (
  SELECT *,
    LEAD(time) OVER (PARTITION BY node, coalesce(device, ''), track ORDER BY time, event_id)
      AS next_time
  FROM marks
)
SELECT node, device, condition, time AS since,
  CASE WHEN track = 'instant' THEN time ELSE next_time END AS until,
  kind, reason, message, attrs['xid'] AS xid, event_id
FROM seq
WHERE condition NOT IN ('ready', 'clock_throttle_cleared')
  AND NOT (kind = 'nic_link_up')
  AND NOT (kind = 'clock_throttle_cleared');
