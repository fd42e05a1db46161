-- Top throttled GPUs: samples with a power, HW-slowdown or thermal throttle bit set
-- (DCGM reasons 0x4 | 0x8 | 0x20 | 0x40 | 0x80 = 236).
SELECT node, device, count(*) AS throttled_samples, min(time) AS first_seen,
       max(time) AS last_seen, max(value) AS reasons
FROM metrics
WHERE metric = 'clock_throttle_reasons' AND (CAST(value AS BIGINT) & 236) <> 0
GROUP BY node, device
ORDER BY throttled_samples DESC, node, device
LIMIT 20;
