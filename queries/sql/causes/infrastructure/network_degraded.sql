-- infrastructure.network_degraded: NIC link flaps or errors on a node of the workload
-- (ConnectX link down/up in the kernel log, NIC error events). A link that went down once
-- or twice and was back up a minute or more before the slowdown began is a weak suspect
-- (strength 0.3): a healed blip does not make a sustained slowdown that starts after it.
-- Trouble still going on at the onset, within its last minute, or inside the slowdown
-- stands at full strength.
WITH link AS (
  SELECT slowdown_id, onset, node, scope, time, kind, event_id, message
  FROM symptom_events
  WHERE kind IN ('nic_link_down', 'nic_link_flap', 'nic_error', 'nic_link_up')
    AND scope IN ('gpu', 'node', 'workload_nodes', 'workload')
),
trouble AS (
  SELECT slowdown_id, node, min(onset) AS onset, min(scope) AS scope, min(time) AS time,
    max(time) AS last_trouble, count(*) AS n,
    array_agg(event_id ORDER BY time, event_id) AS evidence,
    first_value(message ORDER BY time, event_id) AS first_message
  FROM link WHERE kind <> 'nic_link_up'
  GROUP BY slowdown_id, node
),
healed AS (
  SELECT t.slowdown_id, t.node, min(l.time) AS up_at
  FROM trouble t
  JOIN link l ON l.slowdown_id = t.slowdown_id AND l.node = t.node
    AND l.kind = 'nic_link_up' AND l.time > t.last_trouble
    AND l.time <= t.onset - INTERVAL '60 seconds'
  WHERE t.n <= 2
  GROUP BY t.slowdown_id, t.node
)
SELECT t.slowdown_id, 'infrastructure.network_degraded' AS cause, t.scope, t.node,
  CAST(NULL AS VARCHAR) AS device, t.time, t.evidence,
  concat('NIC link trouble on ', t.node, ' (', CAST(t.n AS VARCHAR), ' event(s)): ',
    t.first_message,
    CASE WHEN h.up_at IS NOT NULL THEN concat('; the link was back up ',
      CAST(CAST(date_part('epoch', t.onset) - date_part('epoch', h.up_at) AS BIGINT) AS VARCHAR),
      ' s before the slowdown began') END) AS summary,
  CASE WHEN h.up_at IS NOT NULL THEN 0.3 ELSE 1.0 END AS strength
FROM trouble t
LEFT JOIN healed h ON h.slowdown_id = t.slowdown_id AND h.node = t.node;
