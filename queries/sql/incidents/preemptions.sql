-- preemptions: which workloads were preempted or evicted in a window, by whom, when?
-- Parameters: $from, $to (RFC 3339, or relative like -1d / now).
-- One row per preempted/evicted event (see the `evictions` view): time, namespace,
-- workload, kind, reason, Kueue's preemption reason, preemptor (the namespace/workload
-- that took the quota, resolved from the UIDs Kueue reports), the victim's priority and
-- cluster queue, node and pod where known.
SELECT
    time,
    namespace,
    workload,
    kind,
    reason,
    preemption_reason,
    preemptor,
    priority,
    cluster_queue,
    node,
    pod,
    source
FROM evictions
WHERE time >= $from AND time <= $to
ORDER BY time, namespace, workload, kind;
