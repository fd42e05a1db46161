-- infrastructure.thermal_throttle: clocks cut for temperature on the workload's GPU: DCGM
-- clock-throttle reasons with the SW (0x20) or HW (0x40) thermal bit, or a throttle event
-- that says thermal (the k8s/prometheus decoders' `throttle` class; an HW slowdown alone
-- counts as thermal: the hardware does not say which).
-- Strength: how much more of the symptom's time the GPU spent with a thermal bit set than
-- before the onset (`symptom_throttle_shares`, from its DCGM samples; for an event that
-- names no GPU, the most risen GPU of its node). Without samples (the kernel log or an
-- event alone) the evidence stands as it is.
WITH cand AS (
SELECT slowdown_id, 'infrastructure.thermal_throttle' AS cause, min(scope) AS scope, node,
  device, min(time) AS time, array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Thermal clock throttling on ', node,
    CASE WHEN device IS NOT NULL THEN concat(' GPU ', device) END,
    CASE WHEN first_value(bits ORDER BY time) IS NOT NULL
      THEN concat(' (throttle reasons 0x', to_hex(first_value(bits ORDER BY time)), ')')
      WHEN first_value(attrs['mask'] ORDER BY time) IS NOT NULL
      THEN concat(' (throttle reasons ', first_value(attrs['mask'] ORDER BY time), ')') END)
    AS summary
FROM (SELECT *, TRY_CAST(coalesce(attrs['mask'], attrs['value']) AS BIGINT)
        AS bits
      FROM symptom_events
      WHERE kind = 'clock_throttle' AND scope IN ('gpu', 'node', 'workload_nodes')) x
WHERE (bits IS NOT NULL AND (bits & 96) <> 0)
   OR coalesce(attrs['throttle'], reason) = 'thermal'
   OR coalesce(attrs['throttle'], reason) = 'hw_slowdown'
   OR attrs['thermal'] = 'true'
   OR lower(coalesce(attrs['reasons'], '')) LIKE '%thermal%'
GROUP BY slowdown_id, node, device
),
shares AS (
  SELECT c.slowdown_id, c.node, c.device, max(sh.thermal_rise) AS rise
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
