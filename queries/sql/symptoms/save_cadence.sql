-- Checkpoint saves per workload with the save interval its run configured: each save once
-- (the reports of several ranks and sources that began within 10 seconds of each other
-- are one save), when it began, its step and how long it took, and the `save_steps`
-- (or `save_interval`, `checkpoint_interval`, `ckpt_interval`, `checkpointing.interval`)
-- of the latest run_started of the workload before it. The input of the cadence check.
WITH saves AS (
  SELECT namespace, workload, event_id, time,
    TRY_CAST(attrs['step'] AS BIGINT) AS step,
    TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds,
    CAST(time AS BIGINT) - CAST(coalesce(TRY_CAST(attrs['seconds'] AS DOUBLE), 0.0) * 1e9 AS BIGINT)
      AS began_ns
  FROM events
  WHERE kind = 'checkpoint_saved' AND workload IS NOT NULL
    AND time >= $from AND time <= $to
),
numbered AS (
  SELECT *, sum(CASE WHEN prev IS NULL OR began_ns - prev > 10000000000 THEN 1 ELSE 0 END)
      OVER (PARTITION BY namespace, workload ORDER BY began_ns, event_id) AS save_no
  FROM (SELECT *, lag(began_ns) OVER (PARTITION BY namespace, workload ORDER BY began_ns, event_id)
          AS prev FROM saves) x
),
distinct_saves AS (
  SELECT namespace, workload, save_no, min(began_ns) AS began_ns, max(step) AS step,
    max(seconds) AS seconds
  FROM numbered GROUP BY namespace, workload, save_no
),
configs AS (
  SELECT namespace, workload, time,
    TRY_CAST(coalesce(attrs['save_steps'], attrs['save_interval'], attrs['checkpoint_interval'],
      attrs['ckpt_interval'], attrs['checkpointing.interval'], attrs['save_interval_steps']) AS BIGINT)
      AS save_steps
  FROM events
  WHERE kind = 'run_started' AND workload IS NOT NULL AND time <= $to
    AND coalesce(attrs['save_steps'], attrs['save_interval'], attrs['checkpoint_interval'],
      attrs['ckpt_interval'], attrs['checkpointing.interval'], attrs['save_interval_steps']) IS NOT NULL
),
joined AS (
  SELECT d.namespace, d.workload, d.began_ns, d.step, d.seconds, c.save_steps,
    row_number() OVER (PARTITION BY d.namespace, d.workload, d.save_no
                       ORDER BY c.time DESC NULLS LAST) AS rn
  FROM distinct_saves d
  LEFT JOIN configs c ON c.workload = d.workload AND (c.namespace IS NOT DISTINCT FROM d.namespace)
    AND CAST(c.time AS BIGINT) <= d.began_ns
)
SELECT namespace, workload, began_ns, step, seconds, save_steps
FROM joined
WHERE rn = 1
ORDER BY namespace, workload, began_ns;
