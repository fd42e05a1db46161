-- What the framework announces, per workload and run: evals (eval_started ..
-- eval_finished), checkpoint saves and restores with their duration, and run starts,
-- inside the window plus an
-- hour before it (for the workload's normal save time).
SELECT namespace, workload, run_id, kind, time,
  TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds
FROM events
WHERE kind IN ('eval_started', 'eval_finished', 'checkpoint_saved', 'checkpoint_restored', 'run_started')
  AND time >= $from - INTERVAL '1 hour' AND time <= $to
ORDER BY namespace, workload, run_id, time, kind;
