-- Workloads that serve (their replicas run side by side, not in lockstep): those whose
-- engines export serving series, and those a Deployment, StatefulSet or LeaderWorkerSet
-- owns. A wait of theirs for a replica is a capacity shortfall, not a pending job.
SELECT DISTINCT namespace, workload FROM serving_samples
WHERE workload IS NOT NULL AND time >= $from AND time <= $to
UNION
SELECT DISTINCT namespace, workload FROM events
WHERE workload IS NOT NULL
  AND (attrs['workload_kind'] IN ('Deployment', 'StatefulSet', 'LeaderWorkerSet')
       OR (kind = 'scaled' AND attrs['replica_set'] IS NOT NULL))
  AND time <= $to
ORDER BY namespace, workload;
