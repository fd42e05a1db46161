-- xid_errors: which GPUs reported which NVIDIA Xid errors in a window, how often?
-- Parameters: $from, $to (RFC 3339, or relative like -1d / now).
-- One row per node, device and Xid code: reports, first and last time, the highest
-- severity seen, and the driver's first message. See contracts/causes.md for what the
-- codes mean (79 fell off the bus, 48/63/64/92/94/95 memory, 74 NVLink, ...).
SELECT
    node,
    device,
    xid,
    count(*) AS reports,
    min(time) AS first_seen,
    max(time) AS last_seen,
    CASE max(CASE severity WHEN 'critical' THEN 4 WHEN 'error' THEN 3 WHEN 'warning' THEN 2 ELSE 1 END)
        WHEN 4 THEN 'critical' WHEN 3 THEN 'error' WHEN 2 THEN 'warning' ELSE 'info'
    END AS worst_severity,
    first_value(message ORDER BY time) AS first_message
FROM xid_events
WHERE time >= $from AND time <= $to
GROUP BY node, device, xid
ORDER BY first_seen, node, device, xid;
