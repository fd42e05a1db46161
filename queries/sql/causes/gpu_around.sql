-- Per pace symptom (a regression or a throughput drop), the GPU activity samples of its
-- workload from an hour before its start to its end: SM activity, tensor pipe activity,
-- power draw, utilization, a TPU's duty cycle, each with its node and device. A sample
-- names its workload, else its pod's (`pod_workloads`), else (no pod either) it is on one
-- of the workload's nodes (`named` false). What the rules that tell an idle job from a
-- straggling GPU compare (`framework.straggler_rank`, `framework.dataloader_stall`):
-- computed once by the analyzer (`causes::register`, with the rules' `$first_start` and
-- `$last_end`) and kept as the table `symptom_gpu_samples`, because each of them read
-- these samples from `metrics` (1000 nodes x a day: ~0.4 s a read, most of it pages of
-- every GPU of the cluster).
SELECT s.slowdown_id, m.metric, m.node, m.device, m.time, m.value,
  coalesce(m.workload, p.workload) IS NOT NULL AS named
FROM symptoms s
JOIN metrics m
  ON m.metric IN ('sm_active', 'tensor_active', 'power_watts', 'gpu_util', 'duty_cycle')
  AND m.time >= s.start - INTERVAL '1 hour' AND m.time <= s."end"
LEFT JOIN pod_workloads p
  ON m.pod = p.pod AND (m.namespace IS NOT DISTINCT FROM p.namespace)
-- An exporter without the pod mapping labels its samples with no pod and no workload:
-- those on the workload's own nodes (its scope) are its GPUs' as far as the log can tell
-- (`named` false: a rule that must not mistake another workload's GPU on a shared node
-- for one of the job's reads the named ones only).
LEFT JOIN (SELECT DISTINCT slowdown_id, node FROM symptom_scope
           WHERE level IN ('focus', 'workload') AND node IS NOT NULL) own
  ON own.slowdown_id = s.slowdown_id AND own.node = m.node
  AND m.workload IS NULL AND m.pod IS NULL
-- The same bounds as constants (the span of all the symptoms), so that only the segments
-- around the symptoms are read.
WHERE m.time >= $first_start - INTERVAL '1 hour' AND m.time <= $last_end
  AND s.kind IN ('regression', 'throughput_drop')
  AND ((coalesce(m.workload, p.workload) = s.workload
        AND (coalesce(m.namespace, p.namespace) IS NOT DISTINCT FROM s.namespace))
    OR own.node IS NOT NULL);
