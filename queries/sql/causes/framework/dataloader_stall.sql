-- framework.dataloader_stall: the workload's input pipeline could not keep up
-- (dataloader_wait reported during the slowdown).
-- Strength (`symptom_level_rates`): how far the waits rose above the workload's own
-- level before the onset: waits at the usual level are no evidence.
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
)
SELECT c.slowdown_id, c.cause, c.scope, c.node, c.device, c.time, c.evidence, c.summary,
  coalesce(r.strength, 1.0) AS strength
FROM cand c
LEFT JOIN symptom_level_rates r ON r.slowdown_id = c.slowdown_id AND r.kind = 'dataloader_wait';
