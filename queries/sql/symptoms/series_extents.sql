-- Per series of `metrics` inside the window (namespace, workload, pod, node, device):
-- its first and last sample. One scan of the samples that the workloads' extents
-- (`symptoms/extent.sql`) and their placements (`symptoms/placements.sql`) both read:
-- the analysis registers the result as the table `series_extents` before either.
SELECT namespace, workload, pod, node, device, min(time) AS since, max(time) AS until
FROM metrics
WHERE time >= $from AND time <= $to
GROUP BY namespace, workload, pod, node, device;
