-- framework.checkpoint_save: checkpointing costs too much — saves at normal speed (no
-- storage signal) but more frequent inside the symptom than the workload's cadence before
-- it (a cadence needs two saves before the onset), so step gaps align with saves.
WITH normal AS (
  SELECT namespace, workload, median(TRY_CAST(attrs['seconds'] AS DOUBLE)) AS seconds
  FROM events WHERE kind = 'checkpoint_saved' GROUP BY namespace, workload
),
inside AS (
  SELECT e.slowdown_id, min(e.onset) AS onset, min(e.symptom_end) AS symptom_end,
    count(*) AS n, min(e.time) AS time, array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
    max(TRY_CAST(e.attrs['seconds'] AS DOUBLE)) AS longest, min(nm.seconds) AS normal_seconds
  FROM symptom_events e
  LEFT JOIN normal nm ON nm.workload = e.workload AND (nm.namespace IS NOT DISTINCT FROM e.namespace)
  WHERE e.scope = 'workload' AND e.kind = 'checkpoint_saved' AND e.time >= e.onset
  GROUP BY e.slowdown_id
),
before AS (
  SELECT s.slowdown_id, count(e.event_id) AS n, min(e.time) AS first_t, max(e.time) AS last_t
  FROM symptoms s
  LEFT JOIN events e ON e.kind = 'checkpoint_saved' AND e.workload = s.workload
    AND (e.namespace IS NOT DISTINCT FROM s.namespace)
    AND e.time < s.start AND e.time >= s.start - INTERVAL '6 hours'
  GROUP BY s.slowdown_id
),
cadence AS (
  SELECT i.*, b.n AS n_before,
    (extract(epoch FROM i.symptom_end) - extract(epoch FROM i.onset)) / i.n AS every_inside,
    CASE WHEN b.n >= 2
      THEN (extract(epoch FROM b.last_t) - extract(epoch FROM b.first_t)) / (b.n - 1) END
      AS every_before
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
  AND (normal_seconds IS NULL OR longest <= 3 * normal_seconds);
