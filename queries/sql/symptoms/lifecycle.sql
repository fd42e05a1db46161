-- Lifecycle marks of every workload (queued, admitted, evicted, pods scheduled, run
-- started or finished, a Job's completion, a Slurm job cancelled, containers started, image pulls; a pod gated or given a Kueue
-- Workload; an inventory's pod placed) inside the window, in time order, with the pod
-- each names (a controller's `Created pod: X` / `Deleted pod: X` names X): the input of
-- the pending detector and of each run's end. For a serving workload's replicas also: a
-- pod's loss (its node NotReady, the taint manager evicting it) and its readiness probe
-- failing (`not_ready`: a replica that runs but does not serve yet) and its Ready condition
-- from an inventory (`pod_ready`). And the kubelet backing off restarting a failed container
-- (`back_off`): a start that did not hold.
SELECT namespace, workload, run_id,
  CASE WHEN kind = 'unhealthy' THEN 'not_ready' ELSE kind END AS kind, time,
  coalesce(pod, CASE WHEN lower(attrs['child_kind']) = 'pod' THEN attrs['child_name'] END) AS pod
FROM events
WHERE workload IS NOT NULL
  AND (kind IN ('pending', 'failed_scheduling', 'evicted', 'preempted', 'suspended', 'requeued',
               'created', 'admitted', 'resumed', 'quota_reserved', 'scheduled', 'started',
               'run_started', 'finished', 'completed', 'run_finished', 'deleted',
               'saw_completed_job', 'job_completed', 'job_cancelled',
               'container_started', 'image_pulling', 'image_pulled', 'image_pull_failed',
               'pod_unschedulable', 'workload_created', 'pod_placed', 'back_off')
       OR (kind IN ('taint_manager_eviction', 'node_not_ready', 'pod_ready') AND pod IS NOT NULL)
       OR (kind = 'unhealthy' AND pod IS NOT NULL AND message LIKE 'Readiness probe failed%'))
  -- A controller creating a child Job (a CronJob's run, a JobSet's replicated Job) does not
  -- wait for it: that Job is a workload of its own.
  -- (The CronJob controller says `Created job X`, the Job controller `Created pod: X`.)
  AND NOT (kind = 'created' AND lower(coalesce(attrs['child_kind'], '')) = 'job')
  AND time >= $from AND time <= $to
ORDER BY namespace, workload, time, kind;
