-- infrastructure.power_throttle: clocks cut for power on the workload's GPU: throttle
-- reasons with the SW power cap (0x4) or HW power brake (0x80) bit, or an event that
-- says power.
SELECT slowdown_id, 'infrastructure.power_throttle' AS cause, min(scope) AS scope, node,
  device, min(time) AS time, array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Power clock throttling on ', node,
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
WHERE (bits IS NOT NULL AND (bits & 132) <> 0)
   OR coalesce(attrs['throttle'], reason) = 'power'
   OR attrs['power'] = 'true'
   OR lower(coalesce(attrs['reasons'], '')) LIKE '%power%'
GROUP BY slowdown_id, node, device;
