-- orchestrator.image_pull: the workload's image pull was slow or failing (ErrImagePull,
-- ImagePullBackOff, Failed to pull).
SELECT slowdown_id, 'orchestrator.image_pull' AS cause, 'workload' AS scope,
  min(node) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  array_agg(event_id ORDER BY time, event_id) AS evidence,
  concat('Image pull trouble for ', coalesce(min(namespace), ''), '/', min(workload), ': ',
    first_value(message ORDER BY time)) AS summary
FROM symptom_events
WHERE scope = 'workload'
  AND (kind IN ('image_pull_failed', 'image_pull_back_off', 'image_pull')
       OR reason IN ('ErrImagePull', 'ImagePullBackOff')
       OR (kind = 'back_off' AND lower(coalesce(message, '')) LIKE '%image%')
       OR (reason = 'Failed' AND lower(coalesce(message, '')) LIKE '%pull%'))
GROUP BY slowdown_id;
