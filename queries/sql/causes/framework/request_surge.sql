-- framework.request_surge: a serving workload got far more requests than its own level
-- around the slowdown: queueing, not a fault. Its request rate during the latency
-- regression against the rest of the two hours around it (before and after, two minutes
-- apart from it): requests arriving where the engine counts them (TGI), else requests
-- finished (vLLM: these plateau at the engine's capacity, so a surge shows less in them),
-- else prompt tokens; each replica's mean summed. The queue (`requests_waiting`) is told
-- beside it; it alone is no surge (a slower engine queues as well).
-- Strength: 0 at 1.2x the level outside, 1 at 2x and above.
WITH sym AS (
  SELECT slowdown_id, namespace, workload, start, "end" FROM symptoms
  WHERE kind = 'latency_regression'
),
per_pod AS (
  SELECT s.slowdown_id, m.metric, m.pod,
    CASE WHEN m.time >= s.start AND m.time <= s."end" THEN 'during' ELSE 'outside' END AS part,
    avg(m.value) AS value
  FROM sym s
  JOIN serving_samples m ON m.workload = s.workload
    AND (m.namespace IS NOT DISTINCT FROM s.namespace)
    AND m.metric IN ('requests_per_second', 'requests_succeeded_per_second',
                     'prompt_tokens_per_second', 'requests_waiting')
    AND m.time >= s.start - INTERVAL '1 hour' AND m.time <= s."end" + INTERVAL '1 hour'
    AND NOT (m.time > s.start - INTERVAL '2 minutes' AND m.time < s.start)
    AND NOT (m.time > s."end" AND m.time < s."end" + INTERVAL '2 minutes')
    AND m.value = m.value
  GROUP BY s.slowdown_id, m.metric, m.pod,
    CASE WHEN m.time >= s.start AND m.time <= s."end" THEN 'during' ELSE 'outside' END
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
JOIN sym s ON s.slowdown_id = r.slowdown_id
LEFT JOIN levels q ON q.slowdown_id = r.slowdown_id AND q.metric = 'requests_waiting'
WHERE r.pick = 1 AND r.during / r.outside >= 1.2;
