-- framework.straggler_rank: one rank is slow and holds back the rest. For a straggler
-- symptom, its rank; for a regression, a rank whose median compute_seconds in the window
-- is over 15% above its peers'. Attribution keeps it as the verdict only where no infra
-- cause on its node or GPU explains it.
WITH own AS (
  SELECT s.slowdown_id, s.rank, s.start AS time, s.baseline, s.observed,
    f.node, f.device
  FROM symptoms s
  LEFT JOIN (SELECT slowdown_id, min(node) AS node, min(device) AS device FROM symptom_scope
             WHERE level = 'focus' GROUP BY slowdown_id) f ON f.slowdown_id = s.slowdown_id
  WHERE s.kind = 'straggler' AND s.rank IS NOT NULL
),
ranks AS (
  SELECT s.slowdown_id, m.rank, median(m.value) AS c, min(m.node) AS node,
    min(m.device) AS device, min(s.start) AS time
  FROM symptoms s
  JOIN metrics m ON m.metric = 'compute_seconds' AND m.workload = s.workload
    AND (m.namespace IS NOT DISTINCT FROM s.namespace)
    AND m.time >= s.start AND m.time <= s."end"
  WHERE s.kind IN ('regression', 'throughput_drop') AND m.rank IS NOT NULL
  GROUP BY s.slowdown_id, m.rank
),
peers AS (
  SELECT slowdown_id, median(c) AS med, count(*) AS n FROM ranks GROUP BY slowdown_id
)
SELECT slowdown_id, 'framework.straggler_rank' AS cause, 'workload' AS scope, node, device,
  time, NULL AS evidence,
  concat('Rank ', CAST(rank AS VARCHAR),
    CASE WHEN node IS NOT NULL THEN concat(' on ', node) END,
    CASE WHEN device IS NOT NULL THEN concat(' GPU ', device) END,
    ' computes ', CAST(round(observed, 2) AS VARCHAR), ' s per step against its peers'' ',
    CAST(round(baseline, 2) AS VARCHAR), ' s') AS summary
FROM own
UNION ALL
SELECT r.slowdown_id, 'framework.straggler_rank' AS cause, 'workload' AS scope, r.node, r.device,
  r.time, NULL AS evidence,
  concat('Rank ', CAST(r.rank AS VARCHAR),
    CASE WHEN r.node IS NOT NULL THEN concat(' on ', r.node) END,
    ' computes ', CAST(round(r.c, 2) AS VARCHAR), ' s per step against the median ',
    CAST(round(p.med, 2) AS VARCHAR), ' s') AS summary
FROM ranks r JOIN peers p ON p.slowdown_id = r.slowdown_id
WHERE p.n >= 2 AND r.c > 1.15 * p.med;
