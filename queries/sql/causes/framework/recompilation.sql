-- framework.recompilation: the workload's program recompiled (shape changes,
-- XLA/torch.compile) at the onset or during the slowdown: recompile events, or logged
-- compilations after a function's first (`repeat_compiles`).
-- Strength (`symptom_level_rates`): recompiles as often as the workload already did
-- before the onset are its usual behaviour, not a change.
WITH cand AS (
  SELECT slowdown_id, 'framework.recompilation' AS cause, 'workload' AS scope,
    CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
    array_agg(event_id ORDER BY time, event_id) AS evidence,
    concat(CAST(count(*) AS VARCHAR), ' recompilation(s): ', first_value(message ORDER BY time, event_id))
      AS summary
  FROM symptom_events
  WHERE scope = 'workload'
    AND (kind = 'recompile' OR event_id IN (SELECT event_id FROM repeat_compiles))
  GROUP BY slowdown_id
)
SELECT c.slowdown_id, c.cause, c.scope, c.node, c.device, c.time, c.evidence, c.summary,
  coalesce(r.strength, 1.0) AS strength
FROM cand c
LEFT JOIN symptom_level_rates r ON r.slowdown_id = c.slowdown_id AND r.kind = 'recompile';
