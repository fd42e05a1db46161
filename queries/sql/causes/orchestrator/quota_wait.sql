-- orchestrator.quota_wait: the workload waited for admission or quota: Kueue Pending
-- ("insufficient unused quota"), a late QuotaReserved, SchedulingGated pods.
SELECT slowdown_id, 'orchestrator.quota_wait' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Kueue kept ', coalesce(min(namespace), ''), '/', min(workload), ' waiting for quota',
    CASE WHEN max(cq) IS NOT NULL THEN concat(' in ClusterQueue ', max(cq)) END,
    CASE WHEN max(msg) IS NOT NULL THEN concat(': ', max(msg)) END) AS summary
FROM (
  SELECT *, coalesce(attrs['cluster_queue'], attrs['clusterqueue']) AS cq,
    CASE WHEN kind = 'pending' THEN message END AS msg
  FROM symptom_events
  WHERE scope = 'workload'
    AND (kind = 'pending'
      OR (kind = 'quota_reserved' AND TRY_CAST(attrs['wait_seconds'] AS DOUBLE) >= 60)
      OR reason IN ('SchedulingGated', 'Inadmissible')
      OR lower(coalesce(message, '')) LIKE '%insufficient unused quota%')
) x
GROUP BY slowdown_id;
