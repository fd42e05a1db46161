-- framework.straggler_rank: one rank is slow and holds back the rest. For a straggler
-- symptom, its rank (or, found without per-rank data, the GPU that kept its SM activity,
-- tensor pipe activity or power draw — the symptom's metric — while its peers' dropped);
-- for a regression, a rank whose median compute_seconds in the window is over 15% above
-- its peers', or else (rank-0-only or no SDK data) the one GPU of the workload whose SM
-- activity (tensor pipe activity, or power above its idle floor, where DCGM does not
-- profile) stayed at its level before the onset while the median peer's dropped by 15% or
-- more, among the GPUs that worked for the job (at half the busiest one's level before,
-- at least). Attribution keeps it as the verdict only where no infra cause on its node or
-- GPU explains it.
WITH own AS (
  SELECT s.slowdown_id, s.rank, s.start AS time, s.baseline, s.observed,
    f.node, f.device,
    CASE s.metric WHEN 'tensor_active' THEN 'tensor pipe activity'
      WHEN 'power_watts' THEN 'power draw' ELSE 'SM activity' END AS signal
  FROM symptoms s
  LEFT JOIN (SELECT slowdown_id, min(node) AS node, min(device) AS device FROM symptom_scope
             WHERE level = 'focus' GROUP BY slowdown_id) f ON f.slowdown_id = s.slowdown_id
  WHERE s.kind = 'straggler'
),
ranks AS (
  SELECT s.slowdown_id, m.rank, median(m.value) AS c, min(m.node) AS node,
    min(m.device) AS device, min(s.start) AS time
  FROM symptoms s
  JOIN metrics m ON m.metric = 'compute_seconds' AND m.workload = s.workload
    AND (m.namespace IS NOT DISTINCT FROM s.namespace)
    AND m.time >= s.start AND m.time <= s."end"
  -- The same bounds as constants, so that only the segments of the symptoms are read.
  WHERE m.time >= $first_start AND m.time <= $last_end
    AND s.kind IN ('regression', 'throughput_drop') AND m.rank IS NOT NULL
  GROUP BY s.slowdown_id, m.rank
),
peers AS (
  SELECT slowdown_id, median(c) AS med, count(*) AS n FROM ranks GROUP BY slowdown_id
),
activity AS (
  SELECT s.slowdown_id, m.metric, m.node, m.device,
    median(CASE WHEN m.time >= s.start AND m.time <= s."end" THEN m.value END) AS during,
    median(CASE WHEN m.time < s.start - INTERVAL '10 minutes' THEN m.value END) AS before,
    min(m.value) AS floor
  FROM symptoms s
  -- The workload's GPU samples from an hour before the slowdown to its end, those that
  -- name it, or that name nothing on a node the workload held alone (a GPU placed by a
  -- shared node may be another workload's: it would keep its level and pass for the
  -- straggler).
  JOIN symptom_gpu_samples m ON m.slowdown_id = s.slowdown_id
    AND m.metric IN ('sm_active', 'tensor_active', 'power_watts') AND (m.named OR m.alone)
  WHERE s.slowdown_id NOT IN (SELECT slowdown_id FROM peers WHERE n >= 2)
  GROUP BY s.slowdown_id, m.metric, m.node, m.device
),
-- (Medians: the hour before may hold the job's own start-up, its GPUs allocated but idle.)
-- One signal per slowdown: SM activity, else tensor pipe activity, else power. Power
-- has an idle floor (the GPU's least draw around the slowdown): the work a GPU does is
-- its draw above it.
picked AS (
  SELECT slowdown_id, min(CASE metric WHEN 'sm_active' THEN 0 WHEN 'tensor_active' THEN 1
    ELSE 2 END) AS preference
  FROM activity GROUP BY slowdown_id
),
kept AS (
  SELECT a.slowdown_id, a.node, a.device,
    CASE a.metric WHEN 'tensor_active' THEN 'tensor pipe activity'
      WHEN 'power_watts' THEN 'power draw above idle' ELSE 'SM activity' END AS signal,
    CASE WHEN a.metric = 'power_watts'
      THEN (a.during - a.floor) / nullif(a.before - a.floor, 0)
      ELSE a.during / a.before END AS own,
    a.before AS level
  FROM activity a JOIN picked k ON k.slowdown_id = a.slowdown_id
    AND k.preference = CASE a.metric WHEN 'sm_active' THEN 0 WHEN 'tensor_active' THEN 1
      ELSE 2 END
  WHERE a.before > 0 AND a.during IS NOT NULL
    AND (a.metric <> 'power_watts' OR a.before - a.floor > 0)
),
-- The GPUs that worked for the job before the slowdown: at half the busiest one's level at
-- least (a synchronous job's GPUs do the same work). A GPU of a node the job held alone
-- that the job did not use idles at its floor: its level before and during is noise, and
-- "kept" by that reading while the job's GPUs wait.
working AS (
  SELECT k.* FROM kept k
  JOIN (SELECT slowdown_id, max(level) AS busiest FROM kept GROUP BY slowdown_id) b
    ON b.slowdown_id = k.slowdown_id
  WHERE k.level >= 0.5 * b.busiest
),
kept_peers AS (
  SELECT a.slowdown_id, a.node, a.device, a.signal, a.own, median(b.own) AS med,
    count(*) AS n
  FROM working a JOIN working b ON b.slowdown_id = a.slowdown_id
    AND NOT (b.node = a.node AND b.device IS NOT DISTINCT FROM a.device)
  GROUP BY a.slowdown_id, a.node, a.device, a.signal, a.own
)
SELECT slowdown_id, 'framework.straggler_rank' AS cause, 'workload' AS scope, node, device,
  time, NULL AS evidence,
  CASE WHEN rank IS NOT NULL THEN
    concat('Rank ', CAST(rank AS VARCHAR),
      CASE WHEN node IS NOT NULL THEN concat(' on ', node) END,
      CASE WHEN device IS NOT NULL THEN concat(' GPU ', device) END,
      ' computes ', CAST(round(observed, 2) AS VARCHAR), ' s per step against its peers'' ',
      CAST(round(baseline, 2) AS VARCHAR), ' s')
  ELSE
    concat('The GPU ', coalesce(device, '?'), ' on ', coalesce(node, '?'),
      ' kept its ', signal, ' (', CAST(round(100 * observed) AS VARCHAR),
      '% of its usual) while its peers waited at ', CAST(round(100 * baseline) AS VARCHAR),
      '% of theirs: the slow rank runs there')
  END AS summary
FROM own
UNION ALL
SELECT r.slowdown_id, 'framework.straggler_rank' AS cause, 'workload' AS scope, r.node, r.device,
  r.time, NULL AS evidence,
  concat('Rank ', CAST(r.rank AS VARCHAR),
    CASE WHEN r.node IS NOT NULL THEN concat(' on ', r.node) END,
    ' computes ', CAST(round(r.c, 2) AS VARCHAR), ' s per step against the median ',
    CAST(round(p.med, 2) AS VARCHAR), ' s') AS summary
FROM ranks r JOIN peers p ON p.slowdown_id = r.slowdown_id
WHERE p.n >= 2 AND r.c > 1.15 * p.med
UNION ALL
SELECT k.slowdown_id, 'framework.straggler_rank' AS cause, 'workload' AS scope, k.node, k.device,
  s.start AS time, NULL AS evidence,
  concat('The GPU ', coalesce(k.device, '?'), ' on ', k.node, ' kept its ', k.signal, ' (',
    CAST(round(100 * k.own) AS VARCHAR), '% of its level before) while its peers'' fell to ',
    CAST(round(100 * k.med) AS VARCHAR), '%: the slow rank runs there') AS summary
FROM kept_peers k JOIN symptoms s ON s.slowdown_id = k.slowdown_id
-- (Peers waiting in collectives spin: a peer at its idle floor left the job, it waits
-- for no one.)
WHERE k.own >= 0.9 AND k.med <= 0.85 AND k.own - k.med >= 0.15 AND k.med >= 0.1;
