-- framework.checkpoint_save: checkpointing costs too much — saves at normal speed (no
-- storage signal) but more frequent inside the symptom than the workload's cadence before
-- it (a cadence needs two saves before the onset), so step gaps align with saves; or
-- saves more frequent than the run's configured `save_steps` (the cadence symptom).
-- One save counts once however many ranks and sources report it: reports that began
-- within 10 seconds of each other (a trainer's "Saving model checkpoint to …" line at its
-- start, the SDK's checkpoint_saved with its seconds at its end) are one save.
WITH normal AS (
  SELECT namespace, workload, median(TRY_CAST(attrs['seconds'] AS DOUBLE)) AS seconds
  FROM events WHERE kind = 'checkpoint_saved' GROUP BY namespace, workload
),
inside_reports AS (
  SELECT e.slowdown_id, e.onset, e.symptom_end, e.time, e.event_id, e.workload, e.namespace,
    TRY_CAST(e.attrs['seconds'] AS DOUBLE) AS seconds,
    CASE WHEN lag(e.time) OVER (PARTITION BY e.slowdown_id ORDER BY e.time, e.event_id) IS NULL
           OR e.time - lag(e.time) OVER (PARTITION BY e.slowdown_id ORDER BY e.time, e.event_id)
              > INTERVAL '10 seconds'
      THEN 1 ELSE 0 END AS new_save
  FROM symptom_events e
  WHERE e.scope = 'workload' AND e.kind = 'checkpoint_saved' AND e.time >= e.onset
),
inside AS (
  SELECT r.slowdown_id, min(r.onset) AS onset, min(r.symptom_end) AS symptom_end,
    sum(r.new_save) AS n, min(r.time) AS time, array_agg(r.event_id ORDER BY r.time, r.event_id) AS evidence,
    max(r.seconds) AS longest, min(nm.seconds) AS normal_seconds
  FROM inside_reports r
  LEFT JOIN normal nm ON nm.workload = r.workload AND (nm.namespace IS NOT DISTINCT FROM r.namespace)
  GROUP BY r.slowdown_id
),
before_reports AS (
  SELECT s.slowdown_id, e.began,
    CASE WHEN lag(e.began) OVER (PARTITION BY s.slowdown_id ORDER BY e.began, e.event_id) IS NULL
           OR CAST(e.began AS BIGINT)
              - CAST(lag(e.began) OVER (PARTITION BY s.slowdown_id ORDER BY e.began, e.event_id) AS BIGINT)
              > 10000000000
      THEN 1 ELSE 0 END AS new_save
  FROM symptoms s
  JOIN (SELECT namespace, workload, event_id,
          to_timestamp_nanos(CAST(time AS BIGINT)
            - CAST(coalesce(TRY_CAST(attrs['seconds'] AS DOUBLE), 0.0) * 1e9 AS BIGINT)) AS began,
          time
        FROM events WHERE kind = 'checkpoint_saved') e
    ON e.workload = s.workload AND (e.namespace IS NOT DISTINCT FROM s.namespace)
    AND e.time < s.start AND e.time >= s.start - INTERVAL '6 hours'
),
before AS (
  SELECT s.slowdown_id, coalesce(sum(b.new_save), 0) AS n, min(b.began) AS first_t, max(b.began) AS last_t
  FROM symptoms s LEFT JOIN before_reports b ON b.slowdown_id = s.slowdown_id
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
