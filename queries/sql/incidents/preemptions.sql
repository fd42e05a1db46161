-- preemptions: which workloads were preempted or evicted in a window, by whom, when?
-- Parameters: $from, $to (RFC 3339, or relative like -1d / now).
-- One row per preempted/evicted event (see the `evictions` view): time, namespace,
-- workload, kind, reason, preemptor (the workload that took the quota, where the source
-- names it), the victim's priority and cluster queue, node and pod where known.
SELECT
    time,
    namespace,
    workload,
    kind,
    reason,
    preemptor,
    priority,
    cluster_queue,
    node,
    pod,
    source
FROM evictions
WHERE time >= $from AND time <= $to
ORDER BY time, namespace, workload, kind;
