-- throttled_gpus: which GPUs had their clocks cut in a window, why, and how hot?
-- Parameters: $from, $to (RFC 3339, or relative like -1d / now).
-- One row per node and device that reported a clock-throttle event or a throttle-reason
-- sample with a power, thermal or HW-slowdown bit set (see the `gpu_throttle_samples`
-- view): throttled samples out of all samples, which reasons, throttle events, first and
-- last throttled time, the highest temperature and lowest SM clock seen in the window.
WITH samples AS (
    SELECT
        node,
        device,
        count(*) AS samples,
        sum(CASE WHEN throttled THEN 1 ELSE 0 END) AS throttled_samples,
        bool_or(power) AS power,
        bool_or(thermal) AS thermal,
        bool_or(hw_slowdown) AS hw_slowdown,
        min(CASE WHEN throttled THEN time END) AS first_throttled,
        max(CASE WHEN throttled THEN time END) AS last_throttled
    FROM gpu_throttle_samples
    WHERE time >= $from AND time <= $to
    GROUP BY node, device
),
throttle_events AS (
    SELECT node, device, count(*) AS events, min(time) AS first_event, max(time) AS last_event
    FROM events
    WHERE kind = 'clock_throttle' AND time >= $from AND time <= $to
    GROUP BY node, device
),
gauges AS (
    SELECT
        node,
        device,
        max(CASE WHEN metric = 'gpu_temp_celsius' THEN value END) AS max_temp_celsius,
        min(CASE WHEN metric = 'sm_clock_mhz' THEN value END) AS min_sm_clock_mhz
    FROM metrics
    WHERE metric IN ('gpu_temp_celsius', 'sm_clock_mhz') AND time >= $from AND time <= $to
    GROUP BY node, device
),
gpus AS (
    SELECT
        coalesce(s.node, e.node) AS node,
        coalesce(s.device, e.device) AS device,
        coalesce(s.throttled_samples, 0) AS throttled_samples,
        coalesce(s.samples, 0) AS samples,
        concat_ws(',',
            CASE WHEN s.power THEN 'power' END,
            CASE WHEN s.thermal THEN 'thermal' END,
            CASE WHEN s.hw_slowdown THEN 'hw_slowdown' END) AS reasons,
        coalesce(e.events, 0) AS throttle_events,
        least(s.first_throttled, e.first_event) AS first_throttled,
        greatest(s.last_throttled, e.last_event) AS last_throttled
    FROM samples s
    FULL OUTER JOIN throttle_events e ON s.node = e.node AND s.device = e.device
    WHERE coalesce(s.throttled_samples, 0) > 0 OR coalesce(e.events, 0) > 0
)
SELECT
    g.node,
    g.device,
    g.throttled_samples,
    g.samples,
    g.reasons,
    g.throttle_events,
    g.first_throttled,
    g.last_throttled,
    m.max_temp_celsius,
    m.min_sm_clock_mhz
FROM gpus g
LEFT JOIN gauges m ON g.node = m.node AND g.device = m.device
ORDER BY g.first_throttled, g.node, g.device;
