-- framework.dataloader_stall: the workload's input pipeline could not keep up.
-- 1. dataloader_wait reported during the slowdown. Strength (`symptom_level_rates`): how
--    far the waits rose above the workload's own level before the onset: waits at the
--    usual level are no evidence.
-- 2. Where the workload reports no dataloader waits at all (no SDK): its accelerators'
--    duty cycle fell together — every GPU's activity (SM activity where DCGM profiles it,
--    else utilization or a TPU's duty cycle) below its own level of the hour before the
--    onset, none kept it (that is a straggler) — so the devices sat idle between steps.
--    Its GPUs are those `symptom_gpu_samples` gives: named by the sample or its pod, or,
--    from an exporter that labels neither, on the workload's own nodes while its pods were
--    there (an idle GPU's samples before the job started would pass for its level).
--    Only for a training job's pace (a serving workload's utilization follows traffic).
--    This is the contract's "duty cycle down with no infra signal": a conclusion by
--    elimination, so its strength stays at most half, and any cause with evidence of its
--    own outranks it.
-- The evidence starts with the first wait above what the workload reported in the hour
-- before (up to 10 minutes before the onset, the lag a pace regression may be found by)
-- and above twice its usual wait there: waits at the usual level before the pipeline
-- fell behind do not date it (a cause that came first, slow storage, then leads to it).
WITH usual AS (
  SELECT s.slowdown_id,
    greatest(max(coalesce(TRY_CAST(e.attrs['seconds'] AS DOUBLE), 1.0)),
             2.0 * median(coalesce(TRY_CAST(e.attrs['seconds'] AS DOUBLE), 1.0))) AS wait
  FROM symptoms s
  JOIN events e ON e.kind = 'dataloader_wait' AND e.workload = s.workload
    AND (e.namespace IS NOT DISTINCT FROM s.namespace)
    AND e.time >= s.start - INTERVAL '1 hour' AND e.time < s.start - INTERVAL '10 minutes'
  GROUP BY s.slowdown_id
),
cand AS (
  SELECT e.slowdown_id, 'framework.dataloader_stall' AS cause, 'workload' AS scope,
    CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device,
    coalesce(min(CASE WHEN coalesce(TRY_CAST(e.attrs['seconds'] AS DOUBLE), 1.0) > u.wait
                      THEN e.time END),
             min(e.time)) AS time,
    array_agg(event_id ORDER BY time, event_id) AS evidence,
    concat('Input pipeline waits: ', CAST(count(*) AS VARCHAR), ' dataloader_wait report(s)',
      CASE WHEN sum(TRY_CAST(attrs['seconds'] AS DOUBLE)) IS NOT NULL
        THEN concat(', ', CAST(round(sum(TRY_CAST(attrs['seconds'] AS DOUBLE)), 1) AS VARCHAR),
          ' s waiting') END) AS summary
  FROM symptom_events e
  LEFT JOIN usual u ON u.slowdown_id = e.slowdown_id
  WHERE e.scope = 'workload' AND e.kind = 'dataloader_wait'
    AND e.time >= e.onset - INTERVAL '2 minutes'
  GROUP BY e.slowdown_id
),
waits_reported AS (
  SELECT DISTINCT namespace, workload FROM events
  WHERE kind = 'dataloader_wait' AND workload IS NOT NULL
),
unreported AS (
  SELECT s.* FROM symptoms s
  LEFT JOIN waits_reported w ON w.workload = s.workload
    AND (w.namespace IS NOT DISTINCT FROM s.namespace)
  WHERE s.kind IN ('regression', 'throughput_drop') AND w.workload IS NULL
    AND s.metric IN ('seconds_per_step', 'step_time_seconds', 'tokens_per_second')
),
activity AS (
  SELECT s.slowdown_id, m.metric, m.node, m.device,
    avg(CASE WHEN m.time >= s.start AND m.time <= s."end" THEN m.value END) AS during,
    avg(CASE WHEN m.time < s.start - INTERVAL '10 minutes' THEN m.value END) AS before
  FROM unreported s
  -- The workload's GPU samples from an hour before the slowdown to its end.
  JOIN symptom_gpu_samples m ON m.slowdown_id = s.slowdown_id
    AND m.metric IN ('sm_active', 'gpu_util', 'duty_cycle')
  GROUP BY s.slowdown_id, m.metric, m.node, m.device
),
per_metric AS (
  SELECT slowdown_id, metric, count(*) AS n, max(during / before) AS highest,
    median(during / before) AS med,
    CASE metric WHEN 'sm_active' THEN 0 WHEN 'gpu_util' THEN 1 ELSE 2 END AS preference
  FROM activity
  WHERE before > 0 AND during IS NOT NULL
  GROUP BY slowdown_id, metric
),
idle AS (
  SELECT slowdown_id, metric, n, highest, med,
    row_number() OVER (PARTITION BY slowdown_id ORDER BY preference) AS pick
  FROM per_metric
)
SELECT c.slowdown_id, c.cause, c.scope, c.node, c.device, c.time, c.evidence, c.summary,
  coalesce(r.strength, 1.0) AS strength
FROM cand c
LEFT JOIN symptom_level_rates r ON r.slowdown_id = c.slowdown_id AND r.kind = 'dataloader_wait'
UNION ALL
SELECT i.slowdown_id, 'framework.dataloader_stall' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, s.start AS time,
  NULL AS evidence,
  concat('All ', CAST(i.n AS VARCHAR), ' of the workload''s accelerators went idle together: ',
    CASE i.metric WHEN 'sm_active' THEN 'SM activity' WHEN 'gpu_util' THEN 'utilization'
      ELSE 'duty cycle' END,
    ' at ', CAST(round(100 * i.med) AS VARCHAR), '% of its level before the onset (none above ',
    CAST(round(100 * i.highest) AS VARCHAR), '%), as when the input pipeline falls behind')
    AS summary,
  0.5 * least(1.0, (1.0 - i.med) / 0.2) AS strength
FROM idle i JOIN symptoms s ON s.slowdown_id = i.slowdown_id
WHERE i.pick = 1 AND i.highest <= 0.9;
