-- Each serving workload's engine series inside the window, per replica and minute: request
-- latency quantiles (time to first token, between tokens, whole request) and the requests
-- they were measured on, request and token rates, queue depth, requests running, KV cache
-- use and preemptions (`serving_samples`), averaged over the minute's scrapes (the
-- requests summed). The analyzer combines the replicas: the p95 of their requests
-- together, rates and queues summed, the cache's fullest replica.
SELECT namespace, workload, pod, metric,
  date_bin(INTERVAL '1 minute', time, TIMESTAMP '1970-01-01T00:00:00Z') AS time,
  CASE WHEN ends_with(metric, '_observations') THEN sum(value) ELSE avg(value) END AS value
FROM serving_samples
WHERE workload IS NOT NULL AND time >= $from AND time <= $to
  AND value = value
GROUP BY namespace, workload, pod, metric,
  date_bin(INTERVAL '1 minute', time, TIMESTAMP '1970-01-01T00:00:00Z')
ORDER BY namespace, workload, metric, time, pod;
