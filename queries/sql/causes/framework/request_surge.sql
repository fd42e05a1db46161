-- framework.request_surge: a serving workload got far more requests than its own level
-- around the slowdown: queueing, not a fault. Its request rate during the latency
-- regression against the rest of the two hours around it (`symptom_serving_samples`):
-- requests arriving where the engine counts them (TGI), else requests finished (vLLM:
-- these plateau at the engine's capacity, so a surge shows less in them), else prompt
-- tokens; each replica's mean summed. The queue (`requests_waiting`) is told
-- beside it; it alone is no surge (a slower engine queues as well).
-- Strength: 0 at 1.2x the level outside, 1 at 2x and above.
WITH per_pod AS (
  SELECT slowdown_id, metric, pod, part, avg(value) AS value
  FROM symptom_serving_samples
  WHERE metric IN ('requests_per_second', 'requests_succeeded_per_second',
                   'prompt_tokens_per_second', 'requests_waiting')
  GROUP BY slowdown_id, metric, pod, part
),
levels AS (
  SELECT slowdown_id, metric,
    sum(CASE WHEN part = 'during' THEN value END) AS during,
    sum(CASE WHEN part = 'outside' THEN value END) AS outside
  FROM per_pod GROUP BY slowdown_id, metric
),
rate AS (
  SELECT slowdown_id, metric, during, outside,
    row_number() OVER (PARTITION BY slowdown_id ORDER BY
      CASE metric WHEN 'requests_per_second' THEN 0
        WHEN 'requests_succeeded_per_second' THEN 1 ELSE 2 END) AS pick
  FROM levels
  WHERE metric <> 'requests_waiting' AND during IS NOT NULL AND outside > 0
)
SELECT r.slowdown_id, 'framework.request_surge' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, s.start AS time,
  NULL AS evidence,
  concat(CASE r.metric WHEN 'prompt_tokens_per_second' THEN 'Prompt tokens' ELSE 'Requests' END,
    ' at ', CAST(round(r.during / r.outside, 1) AS VARCHAR), 'x the workload''s own level around the slowdown (',
    CAST(round(r.during, 2) AS VARCHAR), '/s against ', CAST(round(r.outside, 2) AS VARCHAR), '/s',
    CASE WHEN q.during IS NOT NULL
      THEN concat('; ', CAST(round(q.during, 1) AS VARCHAR), ' requests waiting against ',
        CAST(round(coalesce(q.outside, 0), 1) AS VARCHAR)) END,
    ')') AS summary,
  least(1.0, greatest(0.0, (r.during / r.outside - 1.2) / 0.8)) AS strength
FROM rate r
JOIN symptoms s ON s.slowdown_id = r.slowdown_id
LEFT JOIN levels q ON q.slowdown_id = r.slowdown_id AND q.metric = 'requests_waiting'
WHERE r.pick = 1 AND r.during / r.outside >= 1.2;
