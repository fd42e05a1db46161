-- Pauses the framework announces, per workload and run: evals (eval_started ..
-- eval_finished) and checkpoint saves with their duration, inside the window plus an
-- hour before it (for the workload's normal save time).
SELECT namespace, workload, run_id, kind, time,
  TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds
FROM events
WHERE kind IN ('eval_started', 'eval_finished', 'checkpoint_saved')
  AND time >= $from - INTERVAL '1 hour' AND time <= $to
ORDER BY namespace, workload, run_id, time, kind;
