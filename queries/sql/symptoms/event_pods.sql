-- The pods each workload's events name, with the first and last time they do (inside the
-- window widened by the analysis' look-back before it and two minutes after it): a pod
-- the workload ran that nothing placed on a node (its scheduling events missing, its
-- GPUs' samples unlabelled) leaves the workload partly unplaced, and the hardware it
-- died with may be anywhere in the cluster (`unplaced` of the symptoms).
SELECT namespace, workload, pod, min(time) AS first, max(time) AS last
FROM events
WHERE pod IS NOT NULL AND workload IS NOT NULL
  AND time >= $from - INTERVAL '15 minutes' AND time <= $to + INTERVAL '2 minutes'
GROUP BY namespace, workload, pod
ORDER BY namespace, workload, pod;
