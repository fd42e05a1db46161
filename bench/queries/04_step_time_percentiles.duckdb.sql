-- Per-rank step-time percentiles of every workload reporting them (whole store).
SELECT workload, rank, count(*) AS steps, median(value) AS p50,
       approx_quantile(value, 0.9) AS p90, approx_quantile(value, 0.99) AS p99,
       max(value) AS worst
FROM metrics
WHERE metric = 'step_time_seconds'
GROUP BY workload, rank
ORDER BY workload, rank;
