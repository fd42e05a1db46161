-- Per workload and GPU, in one-minute buckets inside the window: the mean SM activity
-- (DCGM_FI_PROF_SM_ACTIVE), tensor pipe activity (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE) and
-- power draw (DCGM_FI_DEV_POWER_USAGE, read where no profiling field is), the workload named on the sample, else its pod's (`pod_workloads`). The input of
-- the straggler detector for jobs without per-rank step data.
SELECT coalesce(m.namespace, p.namespace) AS namespace,
  coalesce(m.workload, p.workload) AS workload,
  m.metric, m.node, m.device,
  date_bin(INTERVAL '1 minute', m.time) AS bucket,
  avg(m.value) AS value
FROM metrics m
LEFT JOIN pod_workloads p
  ON m.pod = p.pod AND (m.namespace IS NOT DISTINCT FROM p.namespace)
WHERE m.metric IN ('sm_active', 'tensor_active', 'power_watts')
  AND m.time >= $from AND m.time <= $to
  AND coalesce(m.workload, p.workload) IS NOT NULL
  AND m.node IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6
ORDER BY 1, 2, 3, 4, 5, 6;
