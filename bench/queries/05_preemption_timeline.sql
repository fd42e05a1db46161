-- The preemption story: scaling, quota, admission, eviction, suspension and resume events.
SELECT time, source, kind, namespace, workload, pod, reason, message
FROM events
WHERE kind IN ('scaled', 'quota_reserved', 'admitted', 'preempted', 'evicted', 'suspended',
               'resumed', 'requeued', 'pending', 'checkpoint_restored')
  AND time >= '{data_from}' AND time <= '{data_to}'
ORDER BY time, source, kind, workload;
