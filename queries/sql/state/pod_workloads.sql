-- Which workload each pod placed inside the data belongs to (`pod_placements`): metrics
-- that name only a pod (dcgm-exporter's pod labels) belong to a workload through it.
-- (Pods are not mapped from every event that names them: that would also map serving
-- replicas running since before the data, whose utilization follows their traffic and
-- is no training throughput.)
CREATE OR REPLACE VIEW pod_workloads AS
SELECT DISTINCT namespace, pod, workload
FROM pod_placements
WHERE pod IS NOT NULL AND workload IS NOT NULL;
