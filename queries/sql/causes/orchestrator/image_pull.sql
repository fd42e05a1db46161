-- orchestrator.image_pull: the workload's image pull was slow or failing (ErrImagePull,
-- ImagePullBackOff, Failed to pull), or one of its pods pulled for two minutes or more
-- (the kubelet's `Successfully pulled image … in 11m15s`, or its Pulling → Pulled gap: a
-- Pulled pairs with a Pulling of its pod since the pod's previous Pulled). A container
-- restarted with its image `already present on machine` pulled nothing.
WITH pulled AS (
  SELECT slowdown_id, event_id, pod, logged_time, attrs, message,
    lag(logged_time) OVER (PARTITION BY slowdown_id, pod ORDER BY logged_time, event_id)
      AS previous
  FROM symptom_events
  WHERE scope = 'workload' AND kind = 'image_pulled'
),
pull_gaps AS (
  SELECT p.slowdown_id, p.event_id, p.logged_time,
    max(TRY_CAST(p.attrs['pull_seconds'] AS DOUBLE)) AS told,
    max(q.logged_time) AS began
  FROM pulled p
  LEFT JOIN symptom_events q ON q.slowdown_id = p.slowdown_id AND q.pod = p.pod
    AND q.kind = 'image_pulling' AND q.logged_time < p.logged_time
    AND (p.previous IS NULL OR q.logged_time > p.previous)
  WHERE coalesce(p.message, '') NOT LIKE '%already present on machine%'
  GROUP BY p.slowdown_id, p.event_id, p.logged_time
),
slow_pulls AS (
  SELECT slowdown_id, event_id FROM pull_gaps
  WHERE told >= 120
     OR (told IS NULL AND began IS NOT NULL AND logged_time - began >= INTERVAL '120 seconds')
)
SELECT e.slowdown_id, 'orchestrator.image_pull' AS cause, 'workload' AS scope,
  min(e.node) AS node, CAST(NULL AS VARCHAR) AS device, min(e.time) AS time,
  array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
  concat('Image pull trouble for ', coalesce(min(e.namespace), ''), '/', min(e.workload), ': ',
    -- The kubelet's `Failed to pull image …: <why>` over its bare `Error: ErrImagePull`.
    first_value(e.message ORDER BY CASE WHEN e.message LIKE 'Error: %' THEN 1 ELSE 0 END,
      e.time, e.event_id)) AS summary
FROM symptom_events e
LEFT JOIN slow_pulls s ON s.slowdown_id = e.slowdown_id AND s.event_id = e.event_id
WHERE e.scope = 'workload'
  AND (e.kind IN ('image_pull_failed', 'image_pull_back_off', 'image_pull')
       OR e.reason IN ('ErrImagePull', 'ImagePullBackOff')
       OR (e.kind = 'back_off' AND lower(coalesce(e.message, '')) LIKE '%image%')
       OR (e.reason = 'Failed' AND lower(coalesce(e.message, '')) LIKE '%pull%')
       OR s.event_id IS NOT NULL)
GROUP BY e.slowdown_id;
