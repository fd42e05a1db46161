-- The framework pace series the detectors read: step time, compute time and throughput
-- per run and rank inside the analysis window ($from, $to), in time order.
SELECT namespace, workload, run_id, rank, metric, time, step, value, node, device
FROM metrics
WHERE metric IN ('step_time_seconds', 'compute_seconds', 'tokens_per_second')
  AND time >= $from AND time <= $to
ORDER BY namespace, workload, run_id, metric, rank, time, step;
