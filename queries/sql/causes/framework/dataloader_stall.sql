-- framework.dataloader_stall: the workload's input pipeline could not keep up
-- (dataloader_wait reported during the slowdown).
SELECT slowdown_id, 'framework.dataloader_stall' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Input pipeline waits: ', CAST(count(*) AS VARCHAR), ' dataloader_wait report(s)',
    CASE WHEN sum(TRY_CAST(attrs['seconds'] AS DOUBLE)) IS NOT NULL
      THEN concat(', ', CAST(round(sum(TRY_CAST(attrs['seconds'] AS DOUBLE)), 1) AS VARCHAR),
        ' s waiting') END) AS summary
FROM symptom_events
WHERE scope = 'workload' AND kind = 'dataloader_wait' AND time >= onset - INTERVAL '2 minutes'
GROUP BY slowdown_id;
