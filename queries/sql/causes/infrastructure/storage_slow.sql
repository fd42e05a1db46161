-- infrastructure.storage_slow: checkpoint storage slow or failing: the workload's saves
-- or restores in the window take more than 3x its own median save time, or storage
-- errors appear in its scope.
WITH ckpt AS (
  SELECT namespace, workload, median(TRY_CAST(attrs['seconds'] AS DOUBLE)) AS normal
  FROM events WHERE kind = 'checkpoint_saved' GROUP BY namespace, workload
),
slow AS (
  SELECT e.slowdown_id, e.scope, e.node, e.time, e.event_id,
    concat(replace(e.kind, '_', ' '), ' took ', CAST(e.seconds AS VARCHAR), ' s against a normal ',
      CAST(round(c.normal, 1) AS VARCHAR), ' s') AS what
  FROM (SELECT slowdown_id, scope, node, time, event_id, kind, namespace, workload,
          TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds
        FROM symptom_events
        WHERE scope = 'workload' AND kind IN ('checkpoint_saved', 'checkpoint_restored')) e
  JOIN ckpt c ON c.workload = e.workload AND (c.namespace IS NOT DISTINCT FROM e.namespace)
  WHERE e.seconds > 3 * c.normal
  UNION ALL
  SELECT slowdown_id, scope, node, time, event_id, coalesce(message, kind) AS what
  FROM symptom_events
  WHERE kind IN ('storage_error', 'io_error', 'nfs_error')
    AND scope IN ('workload', 'gpu', 'node', 'workload_nodes')
)
SELECT slowdown_id, 'infrastructure.storage_slow' AS cause, min(scope) AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Checkpoint storage slow: ', first_value(what ORDER BY time),
    CASE WHEN count(*) > 1 THEN concat(' (', CAST(count(*) AS VARCHAR), ' slow operations)') END)
    AS summary
FROM slow
GROUP BY slowdown_id
HAVING count(*) >= 2 OR max(CASE WHEN what LIKE 'checkpoint%' THEN 0 ELSE 1 END) = 1;
