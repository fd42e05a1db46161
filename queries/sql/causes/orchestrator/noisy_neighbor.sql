-- orchestrator.noisy_neighbor: a pod of another workload was placed on a node (or GPU)
-- where the workload's own pod was running, before the onset (or within the 10 minutes
-- a pace regression's onset may lag the change). System and per-node pods are not
-- neighbours that compete: DaemonSet pods (by owner), pods of system namespaces
-- (kube-*, gke-*, gmp-*, *-system, the GPU operator), and a rollout that places one
-- `<name>-<5 chars>` pod on three or more nodes within ten minutes.
WITH rollouts AS (
  SELECT namespace, workload
  FROM events
  WHERE kind = 'scheduled' AND workload IS NOT NULL AND node IS NOT NULL
    AND regexp_like(pod, '-[bcdfghjklmnpqrstvwxz2456789]{5}$')
    AND NOT regexp_like(pod, '-[0-9]+-[bcdfghjklmnpqrstvwxz2456789]{5}$')
  GROUP BY namespace, workload, date_bin(INTERVAL '10 minutes', time)
  HAVING count(DISTINCT node) >= 3
  UNION
  SELECT namespace, workload
  FROM events
  WHERE workload IS NOT NULL
    AND (attrs['workload_kind'] = 'DaemonSet' OR attrs['owner_kind'] = 'DaemonSet')
  GROUP BY namespace, workload
),
placed AS (
  SELECT e.*
  FROM symptom_events e
  LEFT JOIN rollouts r ON r.workload = e.workload AND (r.namespace IS NOT DISTINCT FROM e.namespace)
  WHERE e.kind = 'scheduled' AND e.scope IN ('gpu', 'node', 'workload_nodes')
    AND e.workload IS NOT NULL AND e.workload <> e.s_workload
    AND e.time <= e.onset + INTERVAL '10 minutes'
    AND r.workload IS NULL
    AND NOT (coalesce(e.namespace, '') LIKE 'kube-%' OR coalesce(e.namespace, '') LIKE 'gke-%'
             OR coalesce(e.namespace, '') LIKE 'gmp-%' OR coalesce(e.namespace, '') LIKE '%-system'
             OR coalesce(e.namespace, '') LIKE '%gpu-operator%')
)
SELECT e.slowdown_id, 'orchestrator.noisy_neighbor' AS cause, min(e.scope) AS scope, e.node,
  CAST(NULL AS VARCHAR) AS device, min(e.time) AS time,
  array_agg(e.event_id ORDER BY e.time, e.event_id) AS evidence,
  concat(coalesce(min(e.namespace), ''), '/', min(e.workload), ' placed pod ', min(e.pod),
    ' on ', e.node, ' beside ', coalesce(min(e.s_namespace), ''), '/', min(e.s_workload)) AS summary
FROM placed e
JOIN pod_placements p ON p.node = e.node AND p.workload = e.s_workload
  AND (p.namespace IS NOT DISTINCT FROM e.s_namespace)
  AND p.since <= e.time AND (p.until IS NULL OR p.until > e.time)
GROUP BY e.slowdown_id, e.node;
