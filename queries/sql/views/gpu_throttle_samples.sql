-- gpu_throttle_samples: DCGM clock-throttle (clocks-event) reason samples, decoded.
-- The metric is a bit mask (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS /
-- DCGM_FI_DEV_CLOCKS_EVENT_REASONS): 0x1 idle, 0x2 application clocks, 0x4 SW power cap,
-- 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake. `throttled` is
-- true when a reason that costs performance is set (power, thermal, HW slowdown: 0xEC);
-- idle and application-clock settings are not throttling.
CREATE VIEW gpu_throttle_samples AS
SELECT
    time,
    cluster,
    node,
    device,
    CAST(value AS BIGINT) AS mask,
    (CAST(value AS BIGINT) & 236) <> 0 AS throttled,
    (CAST(value AS BIGINT) & 132) <> 0 AS power,
    (CAST(value AS BIGINT) & 96) <> 0 AS thermal,
    (CAST(value AS BIGINT) & 8) <> 0 AS hw_slowdown
FROM metrics
WHERE metric = 'clock_throttle_reasons';
