-- The framework series the detectors read inside the analysis window ($from, $to), in
-- time order: step time, compute time and throughput per run and rank, and any other
-- framework metric that carries a step (a trainer's logged loss or learning rate): its
-- steps over time are the run's progress when no step time is reported; a trainer's
-- `epoch` (fractional) counts as progress in 1/10000 epochs when nothing has steps.
SELECT namespace, workload, run_id, rank, metric, time, step, value, node, device
FROM metrics
WHERE (metric IN ('step_time_seconds', 'compute_seconds', 'tokens_per_second')
       OR metric = 'epoch' OR (layer = 'framework' AND step IS NOT NULL))
  AND time >= $from AND time <= $to
ORDER BY namespace, workload, run_id, metric, rank, time, step;
