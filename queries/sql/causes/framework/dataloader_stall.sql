-- framework.dataloader_stall: the workload's input pipeline could not keep up
-- (dataloader_wait reported during the slowdown).
-- Strength: how far the waits rose above the workload's own level before the onset (in
-- the hour before, up to 10 minutes before it): waits at the usual level are no
-- evidence, twice the usual wait time per second or more is strong, waits where there
-- were none before are new.
WITH cand AS (
  SELECT slowdown_id, 'framework.dataloader_stall' AS cause, 'workload' AS scope,
    CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
    array_agg(event_id ORDER BY time, event_id) AS evidence,
    concat('Input pipeline waits: ', CAST(count(*) AS VARCHAR), ' dataloader_wait report(s)',
      CASE WHEN sum(TRY_CAST(attrs['seconds'] AS DOUBLE)) IS NOT NULL
        THEN concat(', ', CAST(round(sum(TRY_CAST(attrs['seconds'] AS DOUBLE)), 1) AS VARCHAR),
          ' s waiting') END) AS summary
  FROM symptom_events
  WHERE scope = 'workload' AND kind = 'dataloader_wait' AND time >= onset - INTERVAL '2 minutes'
  GROUP BY slowdown_id
),
waits AS (
  SELECT s.slowdown_id,
    sum(CASE WHEN e.time >= s.start - INTERVAL '10 minutes' AND e.time <= s."end"
      THEN coalesce(TRY_CAST(e.attrs['seconds'] AS DOUBLE), 1.0) END) AS during,
    sum(CASE WHEN e.time < s.start - INTERVAL '10 minutes'
      THEN coalesce(TRY_CAST(e.attrs['seconds'] AS DOUBLE), 1.0) END) AS before,
    max(CAST(s."end" AS BIGINT) - CAST(s.start AS BIGINT)) / 1e9 + 600.0 AS span_during
  FROM symptoms s
  JOIN events e ON e.kind = 'dataloader_wait' AND e.workload = s.workload
    AND (e.namespace IS NOT DISTINCT FROM s.namespace)
    AND e.time >= s.start - INTERVAL '1 hour' AND e.time <= s."end"
  GROUP BY s.slowdown_id
),
seen AS (
  SELECT namespace, workload, min(time) AS first_seen
  FROM events WHERE workload IS NOT NULL GROUP BY namespace, workload
),
rates AS (
  -- The time before the onset the workload was there for: at most 50 minutes.
  SELECT w.slowdown_id, w.during / w.span_during AS during_rate,
    w.before / greatest(
      (CAST(s.start AS BIGINT) - 600000000000
       - greatest(CAST(s.start AS BIGINT) - 3600000000000, CAST(coalesce(sn.first_seen, s.start) AS BIGINT)))
      / 1e9, 60.0) AS before_rate
  FROM waits w JOIN symptoms s ON s.slowdown_id = w.slowdown_id
  LEFT JOIN seen sn ON sn.workload = s.workload AND (sn.namespace IS NOT DISTINCT FROM s.namespace)
)
SELECT c.slowdown_id, c.cause, c.scope, c.node, c.device, c.time, c.evidence, c.summary,
  CASE WHEN r.before_rate IS NULL OR r.before_rate <= 0 THEN 1.0
    ELSE least(1.0, greatest(0.0, coalesce(r.during_rate, 0.0) / r.before_rate - 1.0)) END
    AS strength
FROM cand c LEFT JOIN rates r ON r.slowdown_id = c.slowdown_id;
