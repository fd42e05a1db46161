-- evictions: workloads preempted or evicted, with who took their place.
-- One row per `preempted`/`evicted` event (Kueue Workload conditions and events, the
-- scheduler's preemptions, kubelet evictions): time, namespace, workload, pod, node, kind,
-- reason (the source's: Preempted, InClusterQueue, InCohortReclamation, ...), and the
-- decoder's attrs: preemptor, priority, cluster_queue. message verbatim.
CREATE VIEW evictions AS
SELECT
    time,
    namespace,
    workload,
    pod,
    node,
    kind,
    source,
    reason,
    attrs['preemptor'] AS preemptor,
    attrs['priority'] AS priority,
    attrs['cluster_queue'] AS cluster_queue,
    message,
    event_id
FROM events
WHERE kind IN ('preempted', 'evicted');
