-- infrastructure.storage_slow: checkpoint storage slow or failing: the workload's saves
-- take more than 3x what its own earlier saves took (restores: its earlier restores; never
-- saves against restores), or storage errors appear in its scope. One save or restore
-- counts once however many ranks and sources report it (`checkpoint_ops`); a first
-- restore with no history is not evidence.
WITH ops AS (
  SELECT DISTINCT namespace, workload, kind, op, op_began_ns AS began_ns, op_seconds AS seconds
  FROM checkpoint_ops
  WHERE op_seconds IS NOT NULL
),
judged AS (
  SELECT o.namespace, o.workload, o.kind, o.op, o.seconds, median(h.seconds) AS normal
  FROM ops o
  JOIN ops h ON h.workload = o.workload AND (h.namespace IS NOT DISTINCT FROM o.namespace)
    AND h.kind = o.kind AND h.began_ns < o.began_ns - 60000000000
  GROUP BY o.namespace, o.workload, o.kind, o.op, o.seconds
),
slow AS (
  SELECT e.slowdown_id, e.scope, e.node, e.time, e.event_id,
    concat(replace(e.kind, '_', ' '), ' took ', CAST(round(j.seconds, 2) AS VARCHAR), ' s against a normal ',
      CAST(round(j.normal, 1) AS VARCHAR), ' s') AS what,
    concat(j.kind, '/', CAST(j.op AS VARCHAR)) AS checkpoint
  FROM symptom_events e
  JOIN checkpoint_ops c ON c.event_id = e.event_id
  JOIN judged j ON j.workload = c.workload AND (j.namespace IS NOT DISTINCT FROM c.namespace)
    AND j.kind = c.kind AND j.op = c.op
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
  concat('Checkpoint storage slow: ', first_value(what ORDER BY time, event_id),
    CASE WHEN count(DISTINCT checkpoint) > 1
      THEN concat(' (', CAST(count(DISTINCT checkpoint) AS VARCHAR), ' slow operations)') END)
    AS summary
FROM slow
GROUP BY slowdown_id
HAVING count(DISTINCT checkpoint) >= 2 OR max(CASE WHEN what LIKE 'checkpoint%' THEN 0 ELSE 1 END) = 1;
