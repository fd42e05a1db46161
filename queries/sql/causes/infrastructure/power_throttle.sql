-- infrastructure.power_throttle: clocks cut for power on the workload's GPU: a
-- clock-throttle event whose reason mask has a power bit (SW power cap, HW power brake;
-- decoded once at ingest into `attrs['power']`), or, for an event with no mask, one that
-- says power in its `throttle` class, reason or reason names.
-- Strength: how much more of the symptom's time the GPU spent with a power bit set than
-- before the onset (`symptom_throttle_shares`, from its DCGM samples; for an event that
-- names no GPU, the most risen GPU of its node). Without samples (the kernel log or an
-- event alone) the evidence stands as it is.
WITH cand AS (
SELECT slowdown_id, 'infrastructure.power_throttle' AS cause, min(scope) AS scope, node,
  device, min(time) AS time, array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Power clock throttling on ', node,
    CASE WHEN device IS NOT NULL THEN concat(' GPU ', device) END,
    CASE WHEN first_value(attrs['mask'] ORDER BY time, event_id) IS NOT NULL
      THEN concat(' (throttle reasons ', first_value(attrs['mask'] ORDER BY time, event_id), ')') END)
    AS summary
FROM symptom_events
WHERE kind = 'clock_throttle' AND scope IN ('gpu', 'node', 'workload_nodes', 'workload')
  -- the bits decoded at ingest when the event has a mask (for an event stored before
  -- they were, its mask decoded here); else what it says in words
  AND coalesce(attrs['power'] = 'true',
    throttle_power(coalesce(attrs['mask'], attrs['value'])),
    coalesce(attrs['throttle'], reason) = 'power'
    OR lower(coalesce(attrs['reasons'], '')) LIKE '%power%')
GROUP BY slowdown_id, node, device
),
shares AS (
  SELECT c.slowdown_id, c.node, c.device, max(sh.power_rise) AS rise
  FROM cand c
  JOIN symptom_throttle_shares sh ON sh.slowdown_id = c.slowdown_id AND sh.node = c.node
    AND (c.device IS NULL OR sh.device = c.device)
  GROUP BY c.slowdown_id, c.node, c.device
)
SELECT c.slowdown_id, c.cause, c.scope, c.node, c.device, c.time, c.evidence, c.summary,
  CASE WHEN sh.rise IS NULL THEN 1.0
    ELSE least(1.0, greatest(0.0, sh.rise / 0.5)) END AS strength
FROM cand c
LEFT JOIN shares sh ON sh.slowdown_id = c.slowdown_id AND sh.node = c.node
  AND (sh.device IS NOT DISTINCT FROM c.device);
