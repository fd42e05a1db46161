-- infrastructure.thermal_throttle: clocks cut for temperature on the workload's GPU: DCGM
-- clock-throttle reasons with the SW (0x20) or HW (0x40) thermal bit, or a throttle event
-- that says thermal (the k8s/prometheus decoders' `throttle` class; an HW slowdown alone
-- counts as thermal: the hardware does not say which).
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
GROUP BY slowdown_id, node, device;
