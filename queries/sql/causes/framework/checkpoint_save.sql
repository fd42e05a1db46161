-- framework.checkpoint_save: checkpointing costs too much — saves at normal speed (no
-- storage signal) but more frequent inside the symptom than the workload's cadence before
-- it (a cadence needs two saves before the onset), so step gaps align with saves; or
-- saves more frequent than the run's configured `save_steps` (the cadence symptom).
-- One save counts once however many ranks and sources report it (`checkpoint_ops`).
WITH normal AS (
  SELECT namespace, workload, median(op_seconds) AS seconds
  FROM (SELECT DISTINCT namespace, workload, op, op_seconds FROM checkpoint_ops
        WHERE kind = 'checkpoint_saved') x
  GROUP BY namespace, workload
),
inside AS (
  SELECT e.slowdown_id, min(e.onset) AS onset, min(e.symptom_end) AS symptom_end,
    count(DISTINCT c.op) AS n, min(e.time) AS time,
    array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
    max(c.op_seconds) AS longest, min(nm.seconds) AS normal_seconds
  FROM symptom_events e
  JOIN checkpoint_ops c ON c.event_id = e.event_id
  LEFT JOIN normal nm ON nm.workload = e.workload AND (nm.namespace IS NOT DISTINCT FROM e.namespace)
  WHERE e.scope = 'workload' AND e.kind = 'checkpoint_saved' AND e.time >= e.onset
  GROUP BY e.slowdown_id
),
before AS (
  SELECT s.slowdown_id, count(DISTINCT c.op) AS n,
    min(c.op_began_ns) AS first_ns, max(c.op_began_ns) AS last_ns
  FROM symptoms s
  JOIN checkpoint_ops c ON c.kind = 'checkpoint_saved' AND c.workload = s.workload
    AND (c.namespace IS NOT DISTINCT FROM s.namespace)
    AND c.time < s.start AND c.time >= s.start - INTERVAL '6 hours'
  GROUP BY s.slowdown_id
),
cadence AS (
  SELECT i.*, b.n AS n_before,
    (extract(epoch FROM i.symptom_end) - extract(epoch FROM i.onset)) / i.n AS every_inside,
    CASE WHEN b.n >= 2 THEN (b.last_ns - b.first_ns) / 1e9 / (b.n - 1) END AS every_before
  FROM inside i JOIN before b ON b.slowdown_id = i.slowdown_id
)
SELECT slowdown_id, 'framework.checkpoint_save' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, time, evidence,
  concat(CAST(n AS VARCHAR), ' checkpoint saves during the slowdown, one every ',
    CAST(round(every_inside) AS VARCHAR), ' s',
    CASE WHEN every_before IS NOT NULL
      THEN concat(' against one every ', CAST(round(every_before) AS VARCHAR), ' s before') END,
    CASE WHEN normal_seconds IS NOT NULL
      THEN concat(', each ~', CAST(round(normal_seconds, 1) AS VARCHAR), ' s') END) AS summary
FROM cadence
WHERE n >= 2
  AND every_before IS NOT NULL AND every_inside < 0.67 * every_before
  AND (normal_seconds IS NULL OR longest <= 3 * normal_seconds)
UNION ALL
SELECT s.slowdown_id, 'framework.checkpoint_save' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, s.start AS time,
  array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
  concat('The run saved a checkpoint every ', CAST(round(min(s.observed)) AS VARCHAR),
    ' steps against its configured save_steps ', CAST(round(min(s.baseline)) AS VARCHAR)) AS summary
FROM symptoms s
JOIN symptom_events e ON e.slowdown_id = s.slowdown_id AND e.scope = 'workload'
  AND e.kind = 'checkpoint_saved' AND e.time >= s.start
WHERE s.metric = 'steps_per_checkpoint'
GROUP BY s.slowdown_id, s.start;
