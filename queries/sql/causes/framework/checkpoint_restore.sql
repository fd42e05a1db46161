-- framework.checkpoint_restore: a restore of the workload took far longer (over 3x, and
-- a minute more) than its own earlier restores did. Restores are compared with restores,
-- never with saves; one checkpoint counts once however many ranks and sources report it
-- (per restored step, or per minute without one, within ten minutes: the longest time
-- told); a first restore with no history is not evidence. Attribution keeps it as the
-- verdict only when no earlier cause explains the restart.
WITH restores AS (
  SELECT namespace, workload,
    coalesce(attrs['step'], CAST(date_trunc('minute', time) AS VARCHAR)) AS ckpt,
    date_bin(INTERVAL '10 minutes', time) AS bin,
    min(time) AS time, max(TRY_CAST(attrs['seconds'] AS DOUBLE)) AS seconds
  FROM events
  WHERE kind = 'checkpoint_restored' AND TRY_CAST(attrs['seconds'] AS DOUBLE) IS NOT NULL
  GROUP BY namespace, workload, 3, 4
),
history AS (
  SELECT r.namespace, r.workload, r.ckpt, r.bin, median(h.seconds) AS normal, count(*) AS n
  FROM restores r
  JOIN restores h ON h.workload = r.workload AND (h.namespace IS NOT DISTINCT FROM r.namespace)
    AND h.time < r.time - INTERVAL '1 minute'
  GROUP BY r.namespace, r.workload, r.ckpt, r.bin
),
slow AS (
  SELECT r.namespace, r.workload, r.time, r.seconds, h.normal, r.ckpt
  FROM restores r
  JOIN history h ON h.workload = r.workload AND (h.namespace IS NOT DISTINCT FROM r.namespace)
    AND h.ckpt = r.ckpt AND h.bin = r.bin
  WHERE r.seconds > 3 * h.normal AND r.seconds > h.normal + 60
)
SELECT e.slowdown_id, 'framework.checkpoint_restore' AS cause, 'workload' AS scope,
  min(e.node) AS node, CAST(NULL AS VARCHAR) AS device, min(e.time) AS time,
  array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
  concat('Checkpoint restore took ', CAST(max(s.seconds) AS VARCHAR),
    ' s against a normal ', CAST(round(min(s.normal), 1) AS VARCHAR), ' s of its earlier restores',
    CASE WHEN max(e.attrs['step']) IS NOT NULL THEN concat(' (step ', max(e.attrs['step']), ')') END)
    AS summary
FROM symptom_events e
JOIN slow s ON s.workload = e.workload AND (s.namespace IS NOT DISTINCT FROM e.namespace)
  AND e.logged_time >= s.time AND e.logged_time < s.time + INTERVAL '10 minutes'
  AND coalesce(e.attrs['step'], CAST(date_trunc('minute', e.logged_time) AS VARCHAR)) = s.ckpt
WHERE e.scope = 'workload' AND e.kind = 'checkpoint_restored'
GROUP BY e.slowdown_id;
