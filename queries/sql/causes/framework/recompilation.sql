-- framework.recompilation: the workload's program recompiled (shape changes,
-- XLA/torch.compile) at the onset or during the slowdown.
-- Strength: recompiles as often as the workload already did before the onset (in the
-- hour before, up to 10 minutes before it) are its usual behaviour, not a change: the
-- rate inside the symptom must be well above that (twice or more: strong).
WITH cand AS (
  SELECT slowdown_id, 'framework.recompilation' AS cause, 'workload' AS scope,
    CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
    array_agg(event_id ORDER BY time, event_id) AS evidence,
    concat(CAST(count(*) AS VARCHAR), ' recompilation(s): ', first_value(message ORDER BY time))
      AS summary
  FROM symptom_events
  WHERE scope = 'workload' AND kind = 'recompile'
  GROUP BY slowdown_id
),
counts AS (
  SELECT s.slowdown_id,
    count(CASE WHEN e.time >= s.start - INTERVAL '10 minutes' AND e.time <= s."end" THEN 1 END)
      AS during,
    count(CASE WHEN e.time < s.start - INTERVAL '10 minutes' THEN 1 END) AS before,
    max(CAST(s."end" AS BIGINT) - CAST(s.start AS BIGINT)) / 1e9 + 600.0 AS span_during
  FROM symptoms s
  JOIN events e ON e.kind = 'recompile' AND e.workload = s.workload
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
  SELECT c.slowdown_id, c.during / c.span_during AS during_rate,
    c.before / greatest(
      (CAST(s.start AS BIGINT) - 600000000000
       - greatest(CAST(s.start AS BIGINT) - 3600000000000, CAST(coalesce(sn.first_seen, s.start) AS BIGINT)))
      / 1e9, 60.0) AS before_rate
  FROM counts c JOIN symptoms s ON s.slowdown_id = c.slowdown_id
  LEFT JOIN seen sn ON sn.workload = s.workload AND (sn.namespace IS NOT DISTINCT FROM s.namespace)
)
SELECT c.slowdown_id, c.cause, c.scope, c.node, c.device, c.time, c.evidence, c.summary,
  CASE WHEN r.before_rate IS NULL OR r.before_rate <= 0 THEN 1.0
    ELSE least(1.0, greatest(0.0, r.during_rate / r.before_rate - 1.0)) END AS strength
FROM cand c LEFT JOIN rates r ON r.slowdown_id = c.slowdown_id;
