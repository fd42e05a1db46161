-- Checkpoint saves and restores as operations, one per operation however many ranks and
-- sources report it: one row per report, with the operation it belongs to. A report that
-- says how long it took (`seconds`) is logged when the operation ends, so every report is
-- dated at its start (`began_ns`); reports of one workload and kind that began within 10
-- seconds of the previous one's start or of the latest end before it (Orbax's timed
-- account of a save, then MaxText's `Saved a checkpoint` once it is made), at the same
-- step where both name one, are one operation (`op`, numbered per workload and kind in
-- time order). A restore told as it starts (`Loading model from …`) and again as training goes on (`Continuing training from
-- global step N`) is one operation too: restore reports at the same step within an hour
-- with no progress of the workload between them.
-- `op_began_ns`, `op_step` and `op_seconds` are the operation's start, step and time: the
-- longest any report tells; else, for a save, until the first `checkpoint_save_done` (the
-- weights written) of the workload after it began, before its next save and within an
-- hour, at the same step where both name one; for a restore, until its last report where
-- its reports span more than 10 seconds, else until the workload's first progress after
-- it (`workload_progress`: a framework metric with a step, or a trainer's epoch) less the
-- usual time between its progress records (progress logged every N steps comes N steps
-- after training resumed), within two hours and before its next restore.
CREATE OR REPLACE VIEW checkpoint_ops AS
WITH reports AS (
  SELECT event_id, namespace, workload, run_id, kind, time,
    TRY_CAST(attrs['step'] AS BIGINT) AS step,
    TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds,
    epoch_ns(time)
      - CAST(coalesce(TRY_CAST(attrs['seconds'] AS DOUBLE), 0.0) * 1e9 AS BIGINT) AS began_ns
  FROM events
  WHERE kind IN ('checkpoint_saved', 'checkpoint_restored') AND workload IS NOT NULL
),
progress AS (
  SELECT namespace, workload, t FROM workload_progress
),
previous AS (
  SELECT *,
    lag(began_ns) OVER (PARTITION BY namespace, workload, kind ORDER BY began_ns, event_id)
      AS prev_began_ns,
    lag(step) OVER (PARTITION BY namespace, workload, kind ORDER BY began_ns, event_id)
      AS prev_step,
    max(epoch_ns(time)) OVER (PARTITION BY namespace, workload, kind ORDER BY began_ns, event_id
                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end_ns
  FROM reports
),
progressed AS (
  SELECT r.event_id, count(*) AS n
  FROM previous r
  JOIN progress p ON p.workload = r.workload AND (p.namespace IS NOT DISTINCT FROM r.namespace)
    AND r.kind = 'checkpoint_restored' AND p.t > r.prev_began_ns AND p.t < r.began_ns
  GROUP BY r.event_id
),
marked AS (
  SELECT r.*,
    CASE WHEN r.prev_began_ns IS NULL THEN 1
      WHEN least(r.began_ns - r.prev_began_ns, r.began_ns - r.prev_end_ns) <= 10000000000
        AND (r.step IS NULL OR r.prev_step IS NULL OR r.step = r.prev_step) THEN 0
      WHEN r.kind = 'checkpoint_restored' AND r.step = r.prev_step
        AND r.began_ns - r.prev_began_ns < 3600000000000 AND coalesce(g.n, 0) = 0 THEN 0
      ELSE 1 END AS new_op
  FROM previous r
  LEFT JOIN progressed g ON g.event_id = r.event_id
),
numbered AS (
  SELECT *,
    sum(new_op) OVER (PARTITION BY namespace, workload, kind ORDER BY began_ns, event_id
                      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS op
  FROM marked
),
ops AS (
  SELECT namespace, workload, kind, op, min(began_ns) AS op_began_ns,
    max(began_ns) AS op_last_ns, max(step) AS op_step, max(seconds) AS op_seconds
  FROM numbered
  GROUP BY namespace, workload, kind, op
),
bounded AS (
  SELECT *,
    lead(op_began_ns) OVER (PARTITION BY namespace, workload, kind ORDER BY op) AS next_began_ns
  FROM ops
),
done AS (
  SELECT namespace, workload, epoch_ns(time) AS done_ns,
    TRY_CAST(attrs['step'] AS BIGINT) AS step
  FROM events
  WHERE kind = 'checkpoint_save_done' AND workload IS NOT NULL
),
saved AS (
  SELECT o.namespace, o.workload, o.kind, o.op, min(d.done_ns) AS done_ns
  FROM bounded o
  JOIN done d ON d.workload = o.workload AND (d.namespace IS NOT DISTINCT FROM o.namespace)
    AND o.kind = 'checkpoint_saved' AND o.op_seconds IS NULL
    AND d.done_ns >= o.op_began_ns AND d.done_ns < o.op_began_ns + 3600000000000
    AND (o.next_began_ns IS NULL OR d.done_ns < o.next_began_ns)
    AND (d.step IS NULL OR o.op_step IS NULL OR d.step = o.op_step)
  GROUP BY o.namespace, o.workload, o.kind, o.op
),
cadence AS (
  SELECT namespace, workload, median(gap) AS gap_ns
  FROM (SELECT namespace, workload,
          t - lag(t) OVER (PARTITION BY namespace, workload ORDER BY t) AS gap
        FROM progress) g
  WHERE gap IS NOT NULL
  GROUP BY namespace, workload
),
resumed AS (
  SELECT o.namespace, o.workload, o.kind, o.op,
    CASE WHEN o.op_last_ns - o.op_began_ns > 10000000000 THEN min(o.op_last_ns)
      WHEN min(p.t) IS NOT NULL
        THEN greatest(min(p.t) - coalesce(min(c.gap_ns), 0), min(o.op_last_ns)) END AS done_ns
  FROM bounded o
  LEFT JOIN progress p ON p.workload = o.workload
    AND (p.namespace IS NOT DISTINCT FROM o.namespace)
    AND p.t > o.op_began_ns AND p.t < o.op_began_ns + 7200000000000
    AND (o.next_began_ns IS NULL OR p.t < o.next_began_ns)
  LEFT JOIN cadence c ON c.workload = o.workload AND (c.namespace IS NOT DISTINCT FROM o.namespace)
  WHERE o.kind = 'checkpoint_restored' AND o.op_seconds IS NULL
  GROUP BY o.namespace, o.workload, o.kind, o.op, o.op_began_ns, o.op_last_ns
),
timed AS (
  SELECT namespace, workload, kind, op, done_ns FROM saved
  UNION ALL
  SELECT namespace, workload, kind, op, done_ns FROM resumed WHERE done_ns IS NOT NULL
)
SELECT n.event_id, n.namespace, n.workload, n.run_id, n.kind, n.time, n.step, n.seconds,
  n.began_ns, n.op, o.op_began_ns, o.op_step,
  coalesce(o.op_seconds,
    CASE WHEN t.done_ns IS NOT NULL
      THEN CAST(t.done_ns - o.op_began_ns AS DOUBLE) / 1e9 END) AS op_seconds
FROM numbered n
JOIN ops o ON o.workload = n.workload AND (o.namespace IS NOT DISTINCT FROM n.namespace)
  AND o.kind = n.kind AND o.op = n.op
LEFT JOIN timed t ON t.workload = n.workload AND (t.namespace IS NOT DISTINCT FROM n.namespace)
  AND t.kind = n.kind AND t.op = n.op;
