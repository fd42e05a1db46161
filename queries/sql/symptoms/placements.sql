-- Where each workload ran inside the window: pod placements (scheduled .. killed) and the
-- nodes and GPUs its metrics name, as (namespace, workload, pod, node, device, since,
-- until) rows; the analyzer derives each symptom's nodes, GPUs and pods from them. A pod
-- whose scheduling is not in the data (it started before the window, or the scheduler's
-- events were not shipped) is placed by the other records that name its node: the
-- inventory's Pod (`pod_placed`) and the kubelet's events for it, from the first of them,
-- or the GPU samples that name it. The metrics' parts read `series_extents`, which the
-- analysis registers (`symptoms/series_extents.sql` over the same window): a series'
-- since and until are its first and last sample inside the window. A batch scheduler's job
-- (Slurm's: `job_started` names its nodes, no pod) is placed on each of its nodes from its
-- start to its next end or requeue. A workload's members (a JobSet's child Jobs,
-- `workload_members`) ran where it ran: their placements are its too.
WITH own AS (
SELECT namespace, workload, pod, node, CAST(NULL AS VARCHAR) AS device, since,
  coalesce(until, $to) AS until
FROM pod_placements
WHERE workload IS NOT NULL AND since <= $to AND (until IS NULL OR until >= $from)
UNION ALL
SELECT namespace, workload, pod, node, device, since, until
FROM series_extents
WHERE workload IS NOT NULL AND node IS NOT NULL
UNION ALL
SELECT e.namespace, e.workload, e.pod, e.node, CAST(NULL AS VARCHAR) AS device,
  min(e.time) AS since, max($to) AS until
FROM events e
LEFT JOIN (SELECT DISTINCT namespace, pod FROM pod_placements) p
  ON p.pod = e.pod AND (p.namespace IS NOT DISTINCT FROM e.namespace)
WHERE p.pod IS NULL AND e.workload IS NOT NULL AND e.pod IS NOT NULL AND e.node IS NOT NULL
  AND e.kind IN ('pod_placed', 'container_started', 'container_created', 'image_pulled',
                 'image_pulling', 'pod_running')
  AND e.time <= $to
GROUP BY e.namespace, e.workload, e.pod, e.node
UNION ALL
SELECT e.namespace, e.workload, e.pod, e.node, CAST(NULL AS VARCHAR) AS device,
  min(e.time) AS since, max(coalesce(x.ended, $to)) AS until
FROM events e
LEFT JOIN (
  SELECT s.namespace, s.workload, s.node, s.time AS started, min(x.time) AS ended
  FROM events s
  JOIN events x ON x.workload = s.workload AND (x.namespace IS NOT DISTINCT FROM s.namespace)
    AND x.kind IN ('requeued', 'preempted', 'job_finished', 'job_failed', 'job_cancelled',
                   'job_timeout', 'node_failure')
    AND x.time > s.time AND (x.node IS NULL OR x.node = s.node)
  WHERE s.kind = 'job_started' AND s.pod IS NULL AND s.node IS NOT NULL
  GROUP BY s.namespace, s.workload, s.node, s.time
) x ON x.workload = e.workload AND (x.namespace IS NOT DISTINCT FROM e.namespace)
  AND x.node = e.node AND x.started = e.time
WHERE e.kind = 'job_started' AND e.pod IS NULL AND e.node IS NOT NULL
  AND e.workload IS NOT NULL AND e.time <= $to AND coalesce(x.ended, $to) >= $from
GROUP BY e.namespace, e.workload, e.pod, e.node, e.time
UNION ALL
-- GPU samples that name a pod but not its workload (dcgm-exporter's pod mapping, the pod
-- never scheduled inside the data): the workload whose name the pod's name extends
-- (`<job>-<index>-<id>`, `<deployment>-<hash>-<id>`), the longest such name.
SELECT namespace, workload, pod, node, device, since, until
FROM (
  SELECT g.namespace, w.workload, g.pod, g.node, g.device, g.since, g.until,
    row_number() OVER (PARTITION BY g.namespace, g.pod, g.node, g.device
                       ORDER BY length(w.workload) DESC, w.workload) AS rn
  FROM (
    SELECT namespace, pod, node, device, min(since) AS since, max(until) AS until
    FROM series_extents
    WHERE pod IS NOT NULL AND workload IS NULL AND node IS NOT NULL
    GROUP BY namespace, pod, node, device
  ) g
  JOIN (SELECT DISTINCT namespace, workload FROM events WHERE workload IS NOT NULL) w
    ON (g.namespace IS NOT DISTINCT FROM w.namespace) AND starts_with(g.pod, concat(w.workload, '-'))
) named
WHERE rn = 1
)
SELECT namespace, workload, pod, node, device, since, until FROM own
UNION ALL
SELECT o.namespace, m.workload, o.pod, o.node, o.device, o.since, o.until
FROM own o
JOIN workload_members m ON m.member = o.workload
  AND (m.namespace IS NOT DISTINCT FROM o.namespace)
ORDER BY namespace, workload, node, device, pod, since;
