-- Checkpoint saves per workload with the save interval its run configured: each save once
-- (`checkpoint_ops`), when it began, its step and how long it took, and the `save_steps`
-- (or `save_interval`, `checkpoint_interval`, `ckpt_interval`, `checkpointing.interval`,
-- `save_interval_steps`) of the latest run_started of the workload before it. The input
-- of the cadence check.
WITH saves AS (
  SELECT DISTINCT namespace, workload, op, op_began_ns AS began_ns, op_step AS step,
    op_seconds AS seconds
  FROM checkpoint_ops
  WHERE kind = 'checkpoint_saved' AND time >= $from AND time <= $to
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
  SELECT s.namespace, s.workload, s.began_ns, s.step, s.seconds, c.save_steps,
    row_number() OVER (PARTITION BY s.namespace, s.workload, s.op
                       ORDER BY c.time DESC NULLS LAST) AS rn
  FROM saves s
  LEFT JOIN configs c ON c.workload = s.workload AND (c.namespace IS NOT DISTINCT FROM s.namespace)
    AND epoch_ns(c.time) <= s.began_ns
)
SELECT namespace, workload, began_ns, step, seconds, save_steps
FROM joined
WHERE rn = 1
ORDER BY namespace, workload, began_ns;
