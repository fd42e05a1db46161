-- evictions: workloads preempted or evicted, and who took their place.
-- One row per `preempted`/`evicted` event (Kueue Workload conditions and events, the
-- scheduler's preemptions, kubelet evictions): time, namespace, workload, pod, node, kind,
-- source, reason (the source's: Preempted, InClusterQueue, EvictedDueToPreempted, ...),
-- preemption_reason (Kueue's: InClusterQueue, InCohortReclamation, ...), and:
-- - preemptor: attrs['preemptor'] where the decoder named it, else the namespace/workload
--   whose Kueue Workload UID (attrs['preemptor_uid']) or job UID
--   (attrs['preemptor_job_uid']) other events carry, else the bare UID;
-- - priority, cluster_queue: the victim's, from the event or else from the workload's
--   other events (admission, quota reservation).
-- message verbatim, event_id.
CREATE VIEW evictions AS
WITH by_workload_uid AS (
    SELECT attrs['workload_uid'] AS uid, min(namespace || '/' || workload) AS name
    FROM events
    WHERE attrs['workload_uid'] IS NOT NULL AND workload IS NOT NULL
    GROUP BY attrs['workload_uid']
),
by_job_uid AS (
    SELECT attrs['job_uid'] AS uid, min(namespace || '/' || workload) AS name
    FROM events
    WHERE attrs['job_uid'] IS NOT NULL AND workload IS NOT NULL
    GROUP BY attrs['job_uid']
),
queues AS (
    SELECT namespace, workload, max(attrs['cluster_queue']) AS cluster_queue, max(attrs['priority']) AS priority
    FROM events
    WHERE source = 'kueue' AND (attrs['cluster_queue'] IS NOT NULL OR attrs['priority'] IS NOT NULL)
    GROUP BY namespace, workload
)
SELECT
    e.time,
    e.namespace,
    e.workload,
    e.pod,
    e.node,
    e.kind,
    e.source,
    e.reason,
    coalesce(e.attrs['preemption_reason'], e.attrs['eviction_reason']) AS preemption_reason,
    coalesce(e.attrs['preemptor'], w.name, j.name, e.attrs['preemptor_uid']) AS preemptor,
    coalesce(e.attrs['priority'], q.priority) AS priority,
    coalesce(e.attrs['cluster_queue'], q.cluster_queue) AS cluster_queue,
    e.message,
    e.event_id
FROM events e
LEFT JOIN by_workload_uid w ON w.uid = e.attrs['preemptor_uid']
LEFT JOIN by_job_uid j ON j.uid = e.attrs['preemptor_job_uid']
LEFT JOIN queues q ON q.namespace = e.namespace AND q.workload = e.workload
WHERE e.kind IN ('preempted', 'evicted');
