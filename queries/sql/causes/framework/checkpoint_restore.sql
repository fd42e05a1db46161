-- framework.checkpoint_restore: a restore of the workload took far longer (over 3x) than
-- its own restore or save time. Attribution keeps it as the verdict only when no earlier
-- cause explains the restart.
WITH normal AS (
  SELECT namespace, workload, median(TRY_CAST(attrs['seconds'] AS DOUBLE)) AS seconds
  FROM events WHERE kind IN ('checkpoint_saved', 'checkpoint_restored')
  GROUP BY namespace, workload
)
SELECT e.slowdown_id, 'framework.checkpoint_restore' AS cause, 'workload' AS scope,
  min(e.node) AS node, CAST(NULL AS VARCHAR) AS device, min(e.time) AS time,
  array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
  concat('Checkpoint restore took ', CAST(max(TRY_CAST(e.attrs['seconds'] AS DOUBLE)) AS VARCHAR),
    ' s against a normal ', CAST(round(min(n.seconds), 1) AS VARCHAR), ' s',
    CASE WHEN max(e.attrs['step']) IS NOT NULL THEN concat(' (step ', max(e.attrs['step']), ')') END)
    AS summary
FROM symptom_events e
JOIN normal n ON n.workload = e.workload AND (n.namespace IS NOT DISTINCT FROM e.namespace)
WHERE e.scope = 'workload' AND e.kind = 'checkpoint_restored'
  AND TRY_CAST(e.attrs['seconds'] AS DOUBLE) > 3 * n.seconds
GROUP BY e.slowdown_id;
