-- Which workload each pod placed inside the data belongs to (`pod_placements`): metrics
-- that name only a pod (dcgm-exporter's pod labels) belong to a workload through it.
-- (Pods are not mapped from every event that names them: that would also map serving
-- replicas running since before the data, whose utilization follows their traffic and
-- is no training throughput. For the same reason a pod known only from an inventory
-- maps only where a batch controller owns it, not a Deployment, StatefulSet or
-- DaemonSet.)
CREATE OR REPLACE VIEW pod_workloads AS
SELECT DISTINCT p.namespace, p.pod, p.workload
FROM pod_placements p
LEFT JOIN (
  SELECT event_id, attrs['workload_kind'] AS controller FROM events WHERE kind = 'pod_placed'
) i ON i.event_id = p.event_id
WHERE p.pod IS NOT NULL AND p.workload IS NOT NULL
  AND coalesce(i.controller, '') NOT IN ('Deployment', 'StatefulSet', 'ReplicaSet',
                                         'DaemonSet', 'LeaderWorkerSet');
