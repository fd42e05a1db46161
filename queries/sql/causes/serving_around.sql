-- Per latency regression, its workload's serving samples (`serving_samples`) in the two
-- hours around it, each marked `during` the slowdown or `outside` it (the two minutes on
-- either side of its edges left out: a minute's scrape straddles them). What the serving
-- rules compare: request rates and queues, KV cache use and preemptions.
CREATE OR REPLACE VIEW symptom_serving_samples AS
SELECT s.slowdown_id, s.start, m.metric, m.pod, m.time, m.value,
  CASE WHEN m.time >= s.start AND m.time <= s."end" THEN 'during' ELSE 'outside' END AS part
FROM symptoms s
JOIN serving_samples m ON m.workload = s.workload
  AND (m.namespace IS NOT DISTINCT FROM s.namespace)
  AND m.time >= s.start - INTERVAL '1 hour' AND m.time <= s."end" + INTERVAL '1 hour'
  AND NOT (m.time > s.start - INTERVAL '2 minutes' AND m.time < s.start)
  AND NOT (m.time > s."end" AND m.time < s."end" + INTERVAL '2 minutes')
  AND m.value = m.value
WHERE s.kind = 'latency_regression';
