-- framework.checkpoint_restore: a restore of the workload took far longer (over 3x, and
-- a minute more) than its own earlier restores did. Restores are compared with restores,
-- never with saves; one restore counts once however many ranks and sources report it
-- (`checkpoint_ops`); a first restore with no history is not evidence. Attribution keeps
-- it as the verdict only when no earlier cause explains the restart.
WITH restores AS (
  SELECT DISTINCT namespace, workload, op, op_began_ns AS began_ns, op_seconds AS seconds
  FROM checkpoint_ops
  WHERE kind = 'checkpoint_restored' AND op_seconds IS NOT NULL
),
slow AS (
  SELECT r.namespace, r.workload, r.op, r.seconds, median(h.seconds) AS normal
  FROM restores r
  JOIN restores h ON h.workload = r.workload AND (h.namespace IS NOT DISTINCT FROM r.namespace)
    AND h.began_ns < r.began_ns - 60000000000
  GROUP BY r.namespace, r.workload, r.op, r.seconds
  HAVING r.seconds > 3 * median(h.seconds) AND r.seconds > median(h.seconds) + 60
)
SELECT e.slowdown_id, 'framework.checkpoint_restore' AS cause, 'workload' AS scope,
  min(e.node) AS node, CAST(NULL AS VARCHAR) AS device, min(e.time) AS time,
  array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
  concat('Checkpoint restore took ', CAST(round(max(s.seconds), 2) AS VARCHAR),
    ' s against a normal ', CAST(round(min(s.normal), 1) AS VARCHAR), ' s of its earlier restores',
    CASE WHEN max(c.op_step) IS NOT NULL THEN concat(' (step ', CAST(max(c.op_step) AS VARCHAR), ')') END)
    AS summary
FROM symptom_events e
JOIN checkpoint_ops c ON c.event_id = e.event_id
JOIN slow s ON s.workload = c.workload AND (s.namespace IS NOT DISTINCT FROM c.namespace) AND s.op = c.op
WHERE e.scope = 'workload' AND e.kind = 'checkpoint_restored'
GROUP BY e.slowdown_id;
