-- Which workloads each pod belongs to (`pod_workloads`), for the metric scan to name the
-- samples that name only their pod (`analyze/metric_scan.rs`).
SELECT namespace, pod, workload FROM pod_workloads;
