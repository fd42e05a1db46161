-- gpu_throttle_samples: DCGM clock-throttle (clocks-event) reason samples, decoded.
-- The metric is a bit mask (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS /
-- DCGM_FI_DEV_CLOCKS_EVENT_REASONS), decoded by whyslow's throttle functions (one table
-- of the NVML bits, shared with the decoders): `throttled` when a bit that cuts clocks is
-- set (power, thermal, HW slowdown; idle, application/display clocks and sync boost are
-- settings, not throttling), `power` (SW power cap, HW power brake), `thermal` (SW/HW
-- thermal, and HW slowdown, which the hardware does not attribute), `hw_slowdown`, and
-- `reasons`, the names of the bits set.
CREATE VIEW gpu_throttle_samples AS
SELECT
    time,
    cluster,
    node,
    device,
    CAST(value AS BIGINT) AS mask,
    throttle_slowdown(value) AS throttled,
    throttle_power(value) AS power,
    throttle_thermal(value) AS thermal,
    coalesce(throttle_reasons(value) LIKE '%hw_slowdown%', false) AS hw_slowdown,
    throttle_reasons(value) AS reasons
FROM metrics
WHERE metric = 'clock_throttle_reasons';
