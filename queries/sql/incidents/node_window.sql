-- node_window: what happened on one node in a time window?
-- Parameters: $node (node name), $from, $to (RFC 3339, or relative like -2h / now).
-- One row per event on the node (type 'event': kind, device, workload/pod, summary) and
-- one per metric and device sampled on it (type 'metric': first sample time, samples,
-- min / avg / max), in time order. Use it as the first look at a suspect node.
SELECT time, type, name, device, workload, pod, detail, n
FROM (
    SELECT
        time,
        'event' AS type,
        kind AS name,
        device,
        workload,
        pod,
        CASE
            WHEN reason IS NOT NULL AND message IS NOT NULL THEN severity || ' ' || reason || ': ' || message
            ELSE severity || ' ' || coalesce(reason, message, kind)
        END AS detail,
        CAST(1 AS BIGINT) AS n
    FROM events
    WHERE node = $node AND time >= $from AND time <= $to
    UNION ALL
    SELECT
        min(time) AS time,
        'metric' AS type,
        metric AS name,
        device,
        CASE WHEN count(DISTINCT workload) = 1 THEN max(workload) END AS workload,
        CASE WHEN count(DISTINCT pod) = 1 THEN max(pod) END AS pod,
        'min ' || CAST(round(min(value), 3) AS VARCHAR)
            || ' avg ' || CAST(round(avg(value), 3) AS VARCHAR)
            || ' max ' || CAST(round(max(value), 3) AS VARCHAR) AS detail,
        count(*) AS n
    FROM metrics
    WHERE node = $node AND time >= $from AND time <= $to
    GROUP BY metric, device
) AS happened
ORDER BY time, type, name, device;
