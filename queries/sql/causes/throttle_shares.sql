-- Per symptom and GPU on its nodes: the share of the GPU's DCGM clock-throttle samples with
-- a power bit (SW power cap, HW power brake: `throttle_power`) or a thermal bit (SW/HW
-- thermal, and HW slowdown, which the hardware does not attribute: `throttle_thermal`) set
-- during the symptom, and before it (its own level in the hour before, up to 10 minutes before the
-- onset a pace regression may be found late by). The strength of the throttle rules: a
-- brief or usual bit under load is weak evidence, a sustained new one strong.
-- Computed once by the analyzer (`causes::register`) and kept as the table
-- `symptom_throttle_shares`; `$first_start` and `$last_end` repeat the join's time bounds
-- as constants, so that only the segments around the symptoms are read.
WITH samples AS (
  SELECT s.slowdown_id, m.node, m.device,
    m.time >= s.start AND m.time <= s."end" AS during,
    m.time < s.start - INTERVAL '10 minutes' AS before,
    CASE WHEN throttle_power(m.value) THEN 1.0 ELSE 0.0 END AS power,
    CASE WHEN throttle_thermal(m.value) THEN 1.0 ELSE 0.0 END AS thermal
  FROM symptoms s
  JOIN (SELECT DISTINCT slowdown_id, node FROM symptom_scope) sc ON sc.slowdown_id = s.slowdown_id
  JOIN metrics m ON m.metric = 'clock_throttle_reasons' AND m.node = sc.node
    AND m.time >= s.start - INTERVAL '1 hour' AND m.time <= s."end"
  WHERE m.time >= $first_start - INTERVAL '1 hour' AND m.time <= $last_end
)
SELECT slowdown_id, node, device,
  avg(CASE WHEN during THEN power END) - coalesce(avg(CASE WHEN before THEN power END), 0.0)
    AS power_rise,
  avg(CASE WHEN during THEN thermal END) - coalesce(avg(CASE WHEN before THEN thermal END), 0.0)
    AS thermal_rise
FROM samples
GROUP BY slowdown_id, node, device;
