-- workload_timeline: everything that happened to one workload in a window, all layers.
-- Parameters: $workload (Job/JobSet/Deployment/Slurm job name), $from, $to (RFC 3339, or
-- relative like -2h / now).
-- The workload's own events (admission, preemption, scheduling, checkpoints, restarts)
-- plus infrastructure events on the nodes its pods ran on during the window, in time
-- order, from the `timeline` view.
WITH its_nodes AS (
    SELECT DISTINCT node FROM events
    WHERE workload = $workload AND node IS NOT NULL AND time >= $from AND time <= $to
    UNION
    SELECT DISTINCT node FROM metrics
    WHERE workload = $workload AND node IS NOT NULL AND time >= $from AND time <= $to
)
SELECT time, layer, source, kind, severity, node, device, pod, summary
FROM timeline
WHERE time >= $from AND time <= $to
  AND (workload = $workload OR (layer = 'infrastructure' AND node IN (SELECT node FROM its_nodes)))
ORDER BY time, kind, node, device;
