-- What the framework announces, per workload and run: compilations (a recompile event
-- or a logged compile, with the seconds it says it took), evals (eval_started ..
-- eval_finished, or a trainer's logged eval metrics whose `eval_runtime` says how long the
-- eval that just ended took), run starts, and each checkpoint save and restore once (as
-- `checkpoint_ops` groups their reports) at its end (its start plus its duration, which
-- may be known from a later line than any report) with its duration; inside the window
-- plus an hour before it.
SELECT namespace, workload, run_id, kind, time,
  TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds
FROM events
WHERE kind IN ('eval_started', 'eval_finished', 'run_started')
  AND time >= $from - INTERVAL '1 hour' AND time <= $to
UNION ALL
SELECT namespace, workload, run_id, 'compile' AS kind, time,
  TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds
FROM events
WHERE kind IN ('recompile', 'compile') AND workload IS NOT NULL
  AND time >= $from - INTERVAL '1 hour' AND time <= $to
UNION ALL
SELECT namespace, workload, min(run_id) AS run_id, kind,
  CASE WHEN max(op_seconds) IS NULL THEN max(time)
    ELSE arrow_cast(to_timestamp_nanos(min(op_began_ns) + CAST(max(op_seconds) * 1e9 AS BIGINT)),
      'Timestamp(Microsecond, Some("UTC"))') END AS time,
  max(op_seconds) AS seconds
FROM checkpoint_ops
WHERE time >= $from - INTERVAL '1 hour' AND time <= $to
GROUP BY namespace, workload, kind, op
UNION ALL
SELECT namespace, workload, run_id, 'eval_started' AS kind,
  arrow_cast(to_timestamp_nanos(epoch_ns(time) - CAST(value * 1e9 AS BIGINT)),
    'Timestamp(Microsecond, Some("UTC"))') AS time,
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
