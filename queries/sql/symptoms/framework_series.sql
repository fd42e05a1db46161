-- The framework series the detectors read inside the analysis window ($from, $to), in
-- time order: step time, compute time and throughput per run and rank, and any other
-- framework metric that carries a step (a trainer's logged loss or learning rate): its
-- steps over time are the run's progress when no step time is reported; a trainer's
-- `epoch` (fractional) counts as progress in 1/10000 epochs when nothing has steps.
--
-- Two reads, not one with an OR: DataFusion skips pages by single-column conditions only,
-- and an OR across `metric`, `layer` and `step` made it read every page of `metrics`
-- (1000 nodes x a day: 2.8 -> 1.5 s). The second read leaves out the first's metrics, so
-- no row comes twice.
SELECT namespace, workload, run_id, rank, metric, time, step, value, node, device
FROM metrics
WHERE metric IN ('step_time_seconds', 'compute_seconds', 'tokens_per_second', 'epoch')
  AND time >= $from AND time <= $to
UNION ALL
SELECT namespace, workload, run_id, rank, metric, time, step, value, node, device
FROM metrics
WHERE layer = 'framework' AND step IS NOT NULL
  AND metric NOT IN ('step_time_seconds', 'compute_seconds', 'tokens_per_second', 'epoch')
  AND time >= $from AND time <= $to
ORDER BY namespace, workload, run_id, metric, rank, time, step;
