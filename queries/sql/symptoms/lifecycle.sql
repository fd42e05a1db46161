-- Lifecycle marks of every workload (queued, admitted, evicted, pods scheduled, run
-- started or finished) inside the window, in time order: the input of the pending
-- detector and of each run's end.
SELECT namespace, workload, run_id, kind, time
FROM events
WHERE workload IS NOT NULL
  AND kind IN ('pending', 'failed_scheduling', 'evicted', 'preempted', 'suspended', 'requeued',
               'created', 'admitted', 'resumed', 'quota_reserved', 'scheduled', 'started',
               'run_started', 'finished', 'completed', 'run_finished', 'deleted')
  AND time >= $from AND time <= $to
ORDER BY namespace, workload, time, kind;
