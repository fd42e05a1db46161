-- orchestrator.preemption: the workload was evicted or preempted to make room for a
-- higher-priority or reclaiming workload (Kueue Evicted/Preempted with InClusterQueue,
-- InCohortReclamation, ...; scheduler Preempted). Names the preemptor — from the event's
-- attrs (`preemptor` as NS/NAME or NAME, or `preemptor_uid` resolved through the Kueue
-- Workload rows' `workload_uid`), else the higher-priority workload admitted in the same
-- ClusterQueue around the eviction — its priority, and the ClusterQueue with the
-- contended resource and quota when the log holds them. When the preemptor's pod started
-- a container after the eviction, the summary says when (within 5 minutes: that pod did
-- not wait); a preemptor left short has a slowdown of its own (`capacity_shortfall`).
WITH ev AS (
  SELECT * FROM symptom_events
  WHERE scope = 'workload' AND kind IN ('evicted', 'preempted')
    AND (reason IN ('Preempted', 'InClusterQueue', 'InCohortReclamation',
                    'InCohortReclaimWhileBorrowing', 'InCohortFairSharing',
                    'WorkloadSliceReplaced')
      OR attrs['preemption_reason'] IS NOT NULL
      OR coalesce(attrs['preemptor_workload'], attrs['preemptor']) IS NOT NULL
      OR lower(coalesce(message, '')) LIKE '%preempt%')
),
victim AS (
  SELECT slowdown_id, min(time) AS t, max(time) AS t_last,
    min(namespace) AS ns, min(workload) AS w,
    max(CASE WHEN strpos(p, '/') > 0 THEN split_part(p, '/', 2) ELSE p END) AS named_preemptor,
    max(coalesce(attrs['preemptor_namespace'],
      CASE WHEN strpos(p, '/') > 0 THEN split_part(p, '/', 1) END)) AS named_preemptor_ns,
    max(attrs['preemptor_uid']) AS preemptor_uid,
    max(attrs['preemptor_priority']) AS named_preemptor_priority,
    max(coalesce(attrs['preemption_reason'],
      CASE WHEN reason <> 'Preempted' AND reason <> 'Evicted' THEN reason END)) AS why,
    max(coalesce(attrs['cluster_queue'], attrs['clusterqueue'])) AS cq
  FROM (SELECT *, coalesce(attrs['preemptor_workload'], attrs['preemptor']) AS p FROM ev) x
  GROUP BY slowdown_id
),
-- Kueue Workload uids to their owning workloads.
uid_owner AS (
  SELECT attrs['workload_uid'] AS uid, min(namespace) AS namespace, min(workload) AS workload
  FROM events WHERE attrs['workload_uid'] IS NOT NULL AND workload IS NOT NULL
  GROUP BY attrs['workload_uid']
),
-- The contended resource, from the victim's Pending messages.
contended AS (
  SELECT slowdown_id, max(attrs['resource']) AS resource FROM symptom_events
  WHERE scope = 'workload' AND kind IN ('pending', 'inadmissible') AND attrs['resource'] IS NOT NULL
  GROUP BY slowdown_id
),
prio AS (
  SELECT namespace, workload, max(attrs['priority']) AS priority,
    max(coalesce(attrs['cluster_queue'], attrs['clusterqueue'])) AS cq
  FROM events WHERE workload IS NOT NULL AND (attrs['priority'] IS NOT NULL
    OR attrs['cluster_queue'] IS NOT NULL OR attrs['clusterqueue'] IS NOT NULL)
  GROUP BY namespace, workload
),
-- Workloads admitted around the eviction in the victim's ClusterQueue: the preemptor
-- when the eviction does not name it, nearest in time first.
admitted_near AS (
  SELECT v.slowdown_id, a.namespace, a.workload, a.time, a.event_id,
    row_number() OVER (PARTITION BY v.slowdown_id
      ORDER BY abs(extract(epoch FROM a.time) - extract(epoch FROM v.t)), a.workload) AS nearest
  FROM victim v
  LEFT JOIN prio vp ON vp.workload = v.w AND (vp.namespace IS NOT DISTINCT FROM v.ns)
  JOIN events a ON a.kind IN ('admitted', 'quota_reserved')
    AND a.time >= v.t - INTERVAL '5 minutes' AND a.time <= v.t + INTERVAL '5 minutes'
    AND a.workload IS NOT NULL AND a.workload <> v.w
  LEFT JOIN prio ap ON ap.workload = a.workload AND (ap.namespace IS NOT DISTINCT FROM a.namespace)
  WHERE (coalesce(v.cq, vp.cq) IS NULL OR ap.cq IS NULL OR ap.cq = coalesce(v.cq, vp.cq))
    AND (vp.priority IS NULL OR ap.priority IS NULL
         OR TRY_CAST(ap.priority AS BIGINT) > TRY_CAST(vp.priority AS BIGINT))
),
named AS (
  SELECT v.*, vp.priority AS victim_priority, coalesce(v.cq, vp.cq) AS queue,
    coalesce(v.named_preemptor, u.workload, n.workload) AS preemptor,
    coalesce(v.named_preemptor_ns, u.namespace, n.namespace, v.ns) AS preemptor_ns,
    r.resource
  FROM victim v
  LEFT JOIN prio vp ON vp.workload = v.w AND (vp.namespace IS NOT DISTINCT FROM v.ns)
  LEFT JOIN uid_owner u ON u.uid = v.preemptor_uid
  LEFT JOIN admitted_near n ON n.slowdown_id = v.slowdown_id AND n.nearest = 1
  LEFT JOIN contended r ON r.slowdown_id = v.slowdown_id
),
-- The preemptor's own marks that led to it: scaled up, admitted, shortly before.
preemptor_marks AS (
  SELECT n.slowdown_id, e.time, e.event_id
  FROM named n
  JOIN events e ON e.workload = n.preemptor AND (e.namespace IS NOT DISTINCT FROM n.preemptor_ns)
    AND e.kind IN ('scaled', 'admitted', 'quota_reserved')
    AND e.time >= n.t - INTERVAL '10 minutes' AND e.time <= n.t + INTERVAL '5 minutes'
),
-- The preemptor's first container start within 30 minutes after the eviction: the pod
-- the preemption made room for.
preemptor_start AS (
  SELECT n.slowdown_id,
    first_value(e.pod ORDER BY e.time, e.event_id) AS pod,
    CAST(round(extract(epoch FROM min(e.time)) - extract(epoch FROM min(n.t))) AS BIGINT) AS after_s,
    min(e.time) AS time,
    first_value(e.event_id ORDER BY e.time, e.event_id) AS event_id
  FROM named n
  JOIN events e ON e.workload = n.preemptor AND (e.namespace IS NOT DISTINCT FROM n.preemptor_ns)
    AND e.kind = 'container_started'
    AND e.time >= n.t AND e.time <= n.t + INTERVAL '30 minutes'
  GROUP BY n.slowdown_id
),
quota AS (
  SELECT coalesce(attrs['cluster_queue'], attrs['clusterqueue'], workload) AS cq,
    max(coalesce(attrs['quota_resource'], attrs['resource'])) AS resource,
    max(coalesce(attrs['nominal_quota'], attrs['quota'])) AS amount
  FROM events WHERE attrs['nominal_quota'] IS NOT NULL OR attrs['quota'] IS NOT NULL
  GROUP BY 1
),
evidence AS (
  SELECT slowdown_id, time, event_id FROM ev
  UNION ALL
  SELECT slowdown_id, time, event_id FROM preemptor_marks
  UNION ALL
  SELECT slowdown_id, time, event_id FROM preemptor_start
),
evidence_list AS (
  SELECT slowdown_id, array_agg(DISTINCT event_id) AS evidence FROM evidence GROUP BY slowdown_id
)
SELECT n.slowdown_id, 'orchestrator.preemption' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, n.t AS time,
  x.evidence,
  concat('Kueue evicted ', coalesce(n.ns, ''), '/', n.w,
    CASE WHEN n.victim_priority IS NOT NULL THEN concat(' (priority ', n.victim_priority, ')') END,
    CASE WHEN n.preemptor IS NOT NULL
      THEN concat(' to admit ', n.preemptor_ns, '/', n.preemptor,
        CASE WHEN coalesce(n.named_preemptor_priority, pp.priority) IS NOT NULL
          THEN concat(' (priority ', coalesce(n.named_preemptor_priority, pp.priority), ')') END)
      ELSE ' to make room for a higher-priority workload' END,
    CASE WHEN n.queue IS NOT NULL THEN concat(' within ClusterQueue ', n.queue,
      CASE WHEN q.amount IS NOT NULL
        THEN concat(' (', coalesce(q.resource, n.resource, 'nvidia.com/gpu'), ' quota ', q.amount, ')')
        WHEN n.resource IS NOT NULL THEN concat(' (', n.resource, ' quota exhausted)') END)
    END,
    CASE WHEN n.why IS NOT NULL THEN concat(' [', n.why, ']') END,
    CASE WHEN ps.pod IS NOT NULL THEN concat('; the preemptor''s pod ', ps.pod, ' started ',
      ps.after_s, ' s after the eviction',
      CASE WHEN ps.after_s <= 300 THEN ' (that pod did not wait)' END) END) AS summary
FROM named n
JOIN evidence_list x ON x.slowdown_id = n.slowdown_id
LEFT JOIN prio pp ON pp.workload = n.preemptor AND (pp.namespace IS NOT DISTINCT FROM n.preemptor_ns)
LEFT JOIN quota q ON q.cq = n.queue
LEFT JOIN preemptor_start ps ON ps.slowdown_id = n.slowdown_id;
