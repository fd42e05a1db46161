-- framework.kv_cache_pressure: a serving engine's KV cache ran full during the latency
-- regression, so requests were preempted (recomputed or swapped) or held back: the share
-- of minutes its fullest replica's cache stood at 90% or more during the slowdown against
-- the two hours around it (`symptom_serving_samples`), and preemptions per second (each replica's mean, summed)
-- during against around (an engine preempts only when its cache cannot hold what runs).
-- A cache that was as full before explains nothing new.
-- Strength: the rise of the full share (1 at +50 points), at least 0.8 where preemptions
-- began or tripled with a cache at 80% or more.
WITH samples AS (
  SELECT slowdown_id, metric, pod, time, value, part
  FROM symptom_serving_samples
  WHERE metric IN ('kv_cache_usage', 'preemptions_per_second')
),
fullest AS (
  -- The fullest replica's cache per minute: pressure on one replica is pressure.
  SELECT slowdown_id, part, max(value) AS value
  FROM samples WHERE metric = 'kv_cache_usage'
  GROUP BY slowdown_id, part,
    date_bin(INTERVAL '1 minute', time, TIMESTAMP '1970-01-01T00:00:00Z')
),
cache AS (
  SELECT slowdown_id,
    avg(CASE WHEN part = 'during' THEN CASE WHEN value >= 0.9 THEN 1.0 ELSE 0.0 END END) AS full_during,
    coalesce(avg(CASE WHEN part = 'outside' THEN CASE WHEN value >= 0.9 THEN 1.0 ELSE 0.0 END END), 0.0)
      AS full_outside,
    max(CASE WHEN part = 'during' THEN value END) AS peak
  FROM fullest
  GROUP BY slowdown_id
),
preempt_pods AS (
  SELECT slowdown_id, pod, part, avg(value) AS value
  FROM samples WHERE metric = 'preemptions_per_second'
  GROUP BY slowdown_id, pod, part
),
preempt AS (
  SELECT slowdown_id,
    sum(CASE WHEN part = 'during' THEN value END) AS during,
    coalesce(sum(CASE WHEN part = 'outside' THEN value END), 0.0) AS outside
  FROM preempt_pods GROUP BY slowdown_id
),
scored AS (
  SELECT c.slowdown_id, c.full_during, c.full_outside, c.peak, p.during AS pre_during,
    p.outside AS pre_outside,
    greatest((c.full_during - c.full_outside) / 0.5,
      CASE WHEN p.during > 0 AND p.during > 3 * p.outside AND c.peak >= 0.8
        THEN 0.8 ELSE 0.0 END) AS raw
  FROM cache c
  LEFT JOIN preempt p ON p.slowdown_id = c.slowdown_id
  WHERE c.full_during IS NOT NULL
)
SELECT x.slowdown_id, 'framework.kv_cache_pressure' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, s.start AS time,
  NULL AS evidence,
  concat('KV cache full (90% or more) on its fullest replica in ',
    CAST(CAST(round(100 * x.full_during) AS BIGINT) AS VARCHAR),
    '% of the minutes of the slowdown (',
    CAST(CAST(round(100 * x.full_outside) AS BIGINT) AS VARCHAR), '% around it), at most ',
    CAST(CAST(round(100 * x.peak) AS BIGINT) AS VARCHAR), '%',
    CASE WHEN x.pre_during IS NOT NULL
      THEN concat('; ', CAST(round(60 * x.pre_during, 1) AS VARCHAR), ' preemptions/min against ',
        CAST(round(60 * x.pre_outside, 1) AS VARCHAR)) END) AS summary,
  least(1.0, x.raw) AS strength
FROM scored x
JOIN symptoms s ON s.slowdown_id = x.slowdown_id
WHERE x.raw > 0;
