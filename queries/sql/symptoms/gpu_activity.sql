-- Per workload and GPU, the samples inside the window of SM activity
-- (DCGM_FI_PROF_SM_ACTIVE), tensor pipe activity (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE) and
-- power draw (DCGM_FI_DEV_POWER_USAGE, read where no profiling field is), the workload
-- named on the sample, else its pod's (`pod_workloads`). The input of the straggler
-- detector for jobs without per-rank step data: only the workloads of the table
-- `straggler_candidates` (namespace, workload), which the analysis registers, are
-- read. Samples, not means: the reader folds them into one-minute means per GPU as
-- they stream, holding an entry per GPU-minute (a hash aggregation here held every
-- GPU-minute group at once: 1.9 GB for a day of 1000 nodes). Rows come unordered.
WITH samples AS (
  SELECT coalesce(m.namespace, p.namespace) AS namespace,
    coalesce(m.workload, p.workload) AS workload,
    m.metric, m.node, m.device, m.time, m.value
  FROM metrics m
  LEFT JOIN pod_workloads p
    ON m.pod = p.pod AND (m.namespace IS NOT DISTINCT FROM p.namespace)
  WHERE m.metric IN ('sm_active', 'tensor_active', 'power_watts')
    AND m.time >= $from AND m.time <= $to
    AND m.node IS NOT NULL
)
SELECT s.namespace, s.workload, s.metric, s.node, s.device, s.time, s.value
FROM samples s
JOIN straggler_candidates c
  ON s.workload = c.workload AND (s.namespace IS NOT DISTINCT FROM c.namespace);
