-- Accelerator utilization (DCGM gpu_util, TPU duty_cycle) per workload inside the
-- window: the workload named on the sample, else its pod's (`pod_workloads`).
SELECT coalesce(m.namespace, p.namespace) AS namespace,
  coalesce(m.workload, p.workload) AS workload,
  m.metric, m.time, m.node, m.device, m.value
FROM metrics m
LEFT JOIN pod_workloads p
  ON m.pod = p.pod AND (m.namespace IS NOT DISTINCT FROM p.namespace)
WHERE m.metric IN ('gpu_util', 'duty_cycle')
  AND m.time >= $from AND m.time <= $to
  AND coalesce(m.workload, p.workload) IS NOT NULL
ORDER BY namespace, workload, metric, time, node, device;
