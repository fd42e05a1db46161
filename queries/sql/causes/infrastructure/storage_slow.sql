-- infrastructure.storage_slow: checkpoint storage slow or failing: the workload's saves
-- take more than 3x what its own earlier saves took (restores: its earlier restores; never
-- saves against restores), or storage errors appear in its scope. One checkpoint counts
-- once however many ranks and sources report it (per kind and step, or minute without a
-- step, within ten minutes: the longest time told); a first restore with no history is
-- not evidence.
WITH ckpt AS (
  SELECT namespace, workload, kind,
    coalesce(attrs['step'], CAST(date_trunc('minute', time) AS VARCHAR)) AS ckpt,
    date_bin(INTERVAL '10 minutes', time) AS bin,
    min(time) AS time, max(TRY_CAST(attrs['seconds'] AS DOUBLE)) AS seconds
  FROM events
  WHERE kind IN ('checkpoint_saved', 'checkpoint_restored')
    AND TRY_CAST(attrs['seconds'] AS DOUBLE) IS NOT NULL
  GROUP BY namespace, workload, kind, 4, 5
),
judged AS (
  SELECT c.namespace, c.workload, c.kind, c.ckpt, c.bin, c.time, c.seconds,
    median(h.seconds) AS normal
  FROM ckpt c
  JOIN ckpt h ON h.workload = c.workload AND (h.namespace IS NOT DISTINCT FROM c.namespace)
    AND h.kind = c.kind AND h.time < c.time - INTERVAL '1 minute'
  GROUP BY c.namespace, c.workload, c.kind, c.ckpt, c.bin, c.time, c.seconds
),
slow AS (
  SELECT e.slowdown_id, e.scope, e.node, e.time, e.event_id,
    concat(replace(e.kind, '_', ' '), ' took ', CAST(j.seconds AS VARCHAR), ' s against a normal ',
      CAST(round(j.normal, 1) AS VARCHAR), ' s') AS what,
    j.kind || '/' || j.ckpt AS checkpoint
  FROM symptom_events e
  JOIN judged j ON j.workload = e.workload AND (j.namespace IS NOT DISTINCT FROM e.namespace)
    AND j.kind = e.kind AND e.logged_time >= j.time AND e.logged_time < j.time + INTERVAL '10 minutes'
    AND coalesce(e.attrs['step'], CAST(date_trunc('minute', e.logged_time) AS VARCHAR)) = j.ckpt
  WHERE e.scope = 'workload' AND e.kind IN ('checkpoint_saved', 'checkpoint_restored')
    AND j.seconds > 3 * j.normal AND j.seconds > j.normal + 10
  UNION ALL
  SELECT slowdown_id, scope, node, time, event_id, coalesce(message, kind) AS what,
    event_id AS checkpoint
  FROM symptom_events
  WHERE kind IN ('storage_error', 'io_error', 'nfs_error')
    AND scope IN ('workload', 'gpu', 'node', 'workload_nodes')
)
SELECT slowdown_id, 'infrastructure.storage_slow' AS cause, min(scope) AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Checkpoint storage slow: ', first_value(what ORDER BY time),
    CASE WHEN count(DISTINCT checkpoint) > 1
      THEN concat(' (', CAST(count(DISTINCT checkpoint) AS VARCHAR), ' slow operations)') END)
    AS summary
FROM slow
GROUP BY slowdown_id
HAVING count(DISTINCT checkpoint) >= 2 OR max(CASE WHEN what LIKE 'checkpoint%' THEN 0 ELSE 1 END) = 1;
