-- What the framework announces, per workload and run: evals (eval_started ..
-- eval_finished, or a trainer's logged eval metrics whose `eval_runtime` says how long the
-- eval that just ended took), checkpoint saves and restores with their duration, and run
-- starts, inside the window plus an hour before it (for the workload's normal save time).
SELECT namespace, workload, run_id, kind, time,
  TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds
FROM events
WHERE kind IN ('eval_started', 'eval_finished', 'checkpoint_saved', 'checkpoint_restored', 'run_started')
  AND time >= $from - INTERVAL '1 hour' AND time <= $to
UNION ALL
SELECT namespace, workload, run_id, 'eval_started' AS kind,
  arrow_cast(to_timestamp_nanos(CAST(time AS BIGINT) - CAST(value * 1e9 AS BIGINT)),
    'Timestamp(Nanosecond, Some("UTC"))') AS time,
  CAST(NULL AS DOUBLE) AS seconds
FROM metrics
WHERE metric = 'eval_runtime' AND value > 0 AND value < 86400
  AND time >= $from - INTERVAL '1 hour' AND time <= $to
UNION ALL
SELECT namespace, workload, run_id, 'eval_finished' AS kind, time, CAST(NULL AS DOUBLE) AS seconds
FROM metrics
WHERE metric = 'eval_runtime' AND value > 0 AND value < 86400
  AND time >= $from - INTERVAL '1 hour' AND time <= $to
ORDER BY namespace, workload, run_id, time, kind;
