-- Checkpoint saves and restores as operations, one per operation however many ranks and
-- sources report it: one row per report, with the operation it belongs to. A report that
-- says how long it took (`seconds`) is logged when the operation ends, so every report is
-- dated at its start (`began_ns`); reports of one workload and kind that began within 10
-- seconds of the previous one, at the same step where both name one, are one operation
-- (`op`, numbered per workload and kind in time order). `op_began_ns`, `op_step` and
-- `op_seconds` are the operation's start, step and time (the longest any report tells).
CREATE OR REPLACE VIEW checkpoint_ops AS
WITH reports AS (
  SELECT event_id, namespace, workload, run_id, kind, time,
    TRY_CAST(attrs['step'] AS BIGINT) AS step,
    TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds,
    CAST(time AS BIGINT)
      - CAST(coalesce(TRY_CAST(attrs['seconds'] AS DOUBLE), 0.0) * 1e9 AS BIGINT) AS began_ns
  FROM events
  WHERE kind IN ('checkpoint_saved', 'checkpoint_restored') AND workload IS NOT NULL
),
marked AS (
  SELECT *,
    CASE WHEN lag(began_ns) OVER (PARTITION BY namespace, workload, kind ORDER BY began_ns, event_id) IS NULL
           OR began_ns - lag(began_ns) OVER (PARTITION BY namespace, workload, kind ORDER BY began_ns, event_id)
              > 10000000000
           OR step <> lag(step) OVER (PARTITION BY namespace, workload, kind ORDER BY began_ns, event_id)
      THEN 1 ELSE 0 END AS new_op
  FROM reports
),
numbered AS (
  SELECT *,
    sum(new_op) OVER (PARTITION BY namespace, workload, kind ORDER BY began_ns, event_id
                      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS op
  FROM marked
)
SELECT event_id, namespace, workload, run_id, kind, time, step, seconds, began_ns, op,
  min(began_ns) OVER (PARTITION BY namespace, workload, kind, op) AS op_began_ns,
  max(step) OVER (PARTITION BY namespace, workload, kind, op) AS op_step,
  max(seconds) OVER (PARTITION BY namespace, workload, kind, op) AS op_seconds
FROM numbered;
