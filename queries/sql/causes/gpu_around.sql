-- Per pace symptom (a regression or a throughput drop), the GPU activity samples of its
-- workload from an hour before its start to its end: SM activity, tensor pipe activity,
-- power draw, utilization, a TPU's duty cycle, each with its node and device. A sample
-- names its workload, else its pod's (`pod_workloads`), else (no pod either) it is on one
-- of the workload's nodes while its pods were there, from an exporter that labels no pod on
-- that node (`named` false, `placed` true; `alone` too where no other workload's pod was on
-- the node). What the rules that tell an idle job from a straggling GPU compare
-- (`framework.straggler_rank`, `framework.dataloader_stall`):
-- computed once by the analyzer (`causes::register`, with the rules' `$first_start` and
-- `$last_end`) and kept as the table `symptom_gpu_samples`, because each of them read
-- these samples from `metrics` (1000 nodes x a day: ~0.4 s a read, most of it pages of
-- every GPU of the cluster).
WITH around AS (
  SELECT s.slowdown_id, m.metric, m.node, m.device, m.time, m.value,
    coalesce(coalesce(m.workload, p.workload) = s.workload
      AND (coalesce(m.namespace, p.namespace) IS NOT DISTINCT FROM s.namespace), false) AS mine,
    own.node IS NOT NULL AS on_own_node,
    m.pod IS NULL AND m.workload IS NULL AS unlabelled,
    held.node IS NOT NULL AS held,
    coalesce(m.time >= held.since AND (held.until IS NULL OR m.time <= held.until), false)
      AS while_held,
    shared.node IS NULL AS unshared
  FROM symptoms s
  JOIN metrics m
    ON m.metric IN ('sm_active', 'tensor_active', 'power_watts', 'gpu_util', 'duty_cycle')
    AND m.time >= s.start - INTERVAL '1 hour' AND m.time <= s."end"
  LEFT JOIN pod_workloads p
    ON m.pod = p.pod AND (m.namespace IS NOT DISTINCT FROM p.namespace)
  -- An exporter without the pod mapping labels its samples with no pod and no workload:
  -- those on the workload's own nodes (its scope) are its GPUs' as far as the log can tell
  -- (`named` false: a rule that must not mistake another workload's GPU on a shared node
  -- for one of the job's reads the named ones only). Every sample of those nodes is read,
  -- to tell whether their exporter labels pods at all.
  LEFT JOIN (SELECT DISTINCT slowdown_id, node FROM symptom_scope
             WHERE level IN ('focus', 'workload') AND node IS NOT NULL) own
    ON own.slowdown_id = s.slowdown_id AND own.node = m.node
  -- Nodes where a pod of another workload was placed from the hour before the symptom to
  -- its end (`unshared` false), per-node agents aside (a DaemonSet's pods, told by its
  -- controller's events, run on every node and hold no GPU). A pod of unknown owner
  -- shares the node.
  LEFT JOIN (SELECT DISTINCT s2.slowdown_id, pl.node
             FROM symptoms s2
             JOIN pod_placements pl ON pl.node IS NOT NULL AND pl.since <= s2."end"
               AND (pl.until IS NULL OR pl.until >= s2.start - INTERVAL '1 hour')
             LEFT JOIN (SELECT DISTINCT namespace, workload FROM events
                        WHERE attrs['workload_kind'] = 'DaemonSet' AND workload IS NOT NULL) ag
               ON ag.workload = pl.workload AND (ag.namespace IS NOT DISTINCT FROM pl.namespace)
             WHERE ag.workload IS NULL
               AND NOT (pl.workload IS NOT NULL AND pl.workload = s2.workload
                        AND (pl.namespace IS NOT DISTINCT FROM s2.namespace))) shared
    ON shared.slowdown_id = s.slowdown_id AND shared.node = m.node
  -- When the workload's pods were on the node (`while_held`): the span from its first pod's
  -- placement there to its last one's end.
  LEFT JOIN (SELECT s3.slowdown_id, pl.node, min(pl.since) AS since,
               CASE WHEN bool_or(pl.until IS NULL) THEN NULL ELSE max(pl.until) END AS until
             FROM symptoms s3
             JOIN pod_placements pl ON pl.node IS NOT NULL AND pl.workload = s3.workload
               AND (pl.namespace IS NOT DISTINCT FROM s3.namespace)
             GROUP BY s3.slowdown_id, pl.node) held
    ON held.slowdown_id = s.slowdown_id AND held.node = m.node
  -- The same bounds as constants (the span of all the symptoms), so that only the segments
  -- around the symptoms are read.
  WHERE m.time >= $first_start - INTERVAL '1 hour' AND m.time <= $last_end
    AND s.kind IN ('regression', 'throughput_drop')
    AND ((coalesce(m.workload, p.workload) = s.workload
          AND (coalesce(m.namespace, p.namespace) IS NOT DISTINCT FROM s.namespace))
      OR own.node IS NOT NULL)
),
labelling AS (
  SELECT *, bool_or(NOT unlabelled) OVER (PARTITION BY slowdown_id, node) AS node_labelled
  FROM around
),
-- A node's unlabelled samples count only where no sample there names a pod or a workload:
-- an exporter that maps pods labels every GPU a pod holds, so beside labelled samples an
-- unlabelled one is a GPU no pod held (idle before the job started, or not allocated to
-- it). And only while the workload's pods were there (before, the GPU idled or was
-- another's), where the log places its pods at all (else, on the nodes of its scope, the
-- whole hour). `alone` asks for its pods placed there, with no other workload's.
placing AS (
  SELECT *,
    on_own_node AND unlabelled AND NOT node_labelled AND (while_held OR NOT held) AS placed
  FROM labelling
)
SELECT slowdown_id, metric, node, device, time, value, mine AS named, placed,
  placed AND while_held AND unshared AS alone
FROM placing
WHERE mine OR placed;
