-- Per symptom and level signal of its workload — dataloader waits (the seconds waited) and
-- recompiles (their count, logged compilations after the first included) — the rate per second inside the symptom (from 10 minutes
-- before its onset, the lag a pace regression may be found by) and before it (in the hour
-- before, as long as the workload was there, at least a minute), and the strength of the
-- rise: none at the workload's usual rate, full from twice it, full too where there was
-- none before. The strength of the rules that judge such a level.
CREATE OR REPLACE VIEW symptom_level_rates AS
WITH signals AS (
  SELECT namespace, workload, kind, time,
    CASE WHEN kind = 'dataloader_wait' THEN coalesce(TRY_CAST(attrs['seconds'] AS DOUBLE), 1.0)
      ELSE 1.0 END AS amount
  FROM events
  WHERE kind IN ('dataloader_wait', 'recompile') AND workload IS NOT NULL
  UNION ALL
  SELECT namespace, workload, 'recompile' AS kind, time, 1.0 AS amount
  FROM repeat_compiles WHERE workload IS NOT NULL
),
amounts AS (
  SELECT s.slowdown_id, g.kind,
    sum(CASE WHEN g.time >= s.start - INTERVAL '10 minutes' THEN g.amount END) AS during,
    sum(CASE WHEN g.time < s.start - INTERVAL '10 minutes' THEN g.amount END) AS before
  FROM symptoms s
  JOIN signals g ON g.workload = s.workload AND (g.namespace IS NOT DISTINCT FROM s.namespace)
    AND g.time >= s.start - INTERVAL '1 hour' AND g.time <= s."end"
  GROUP BY s.slowdown_id, g.kind
),
seen AS (
  SELECT namespace, workload, min(time) AS first_seen
  FROM events WHERE workload IS NOT NULL GROUP BY namespace, workload
),
rates AS (
  SELECT a.slowdown_id, a.kind,
    a.during / ((epoch_ns(s."end") - epoch_ns(s.start)) / 1e9 + 600.0) AS during_rate,
    a.before / greatest(
      (epoch_ns(s.start) - 600000000000
       - greatest(epoch_ns(s.start) - 3600000000000,
                  epoch_ns(coalesce(sn.first_seen, s.start)))) / 1e9, 60.0) AS before_rate
  FROM amounts a
  JOIN symptoms s ON s.slowdown_id = a.slowdown_id
  LEFT JOIN seen sn ON sn.workload = s.workload AND (sn.namespace IS NOT DISTINCT FROM s.namespace)
)
SELECT slowdown_id, kind, during_rate, before_rate,
  CASE WHEN before_rate IS NULL OR before_rate <= 0 THEN 1.0
    ELSE least(1.0, greatest(0.0, coalesce(during_rate, 0.0) / before_rate - 1.0)) END AS strength
FROM rates;
